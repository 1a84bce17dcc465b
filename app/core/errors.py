"""The errors cafbot shows to people. Each message says what happened and what to do.

`CafbotError` is the base: the CLI and the app catch it and print `str(error)` without a traceback.
`ConfigError` and `KnowledgeBaseError` mean the user's files or settings need fixing;
`ModelError` means a model endpoint misbehaved (unreachable, timed out, or answered nonsense).
"""

from __future__ import annotations


class CafbotError(Exception):
    """Base class for errors with a message meant for the user."""


class ConfigError(CafbotError):
    """The configuration is invalid or incomplete."""


class KnowledgeBaseError(CafbotError):
    """A knowledge-base file is malformed; the message names the file and the field."""


class ModelError(CafbotError):
    """A model call failed: unreachable endpoint, timeout, error status or unusable output."""

    def __init__(self, role: str, model: str, reason: str):
        self.role, self.model, self.reason = role, model, reason
        self.call = None  # the failed call's record (app.core.models.ModelCall), when there was one
        super().__init__(
            f"The {role} model ({model or 'unnamed'}) failed: {reason.rstrip('.')}. "
            "Check that its endpoint is running and reachable (`cafbot config show`), "
            "or switch the role off with provider = \"none\"."
        )
