"""The one seam through which every model call passes: `model_for(role)` and the `call_*` helpers."""

from app.core.models.calls import Deadline, ModelCall, RoleClient, call_structured, call_text
from app.core.models.factory import helper_model, model_for

__all__ = ["Deadline", "ModelCall", "RoleClient", "call_structured", "call_text", "helper_model", "model_for"]
