"""The model seam: scripted models, call records, structured output and its failures."""

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from app.core.config import Settings
from app.core.errors import ConfigError, ModelError
from app.core.models import RoleClient, call_structured, call_text, model_for
from app.core.models.scripted import ScriptedChatModel


class Answer(BaseModel):
    verdict: str
    reason: str


def client(*replies):
    return RoleClient("judge", "scripted", ScriptedChatModel(list(replies)))


def test_text_call_records_tokens_and_remembers_the_prompt():
    c = client("hello there")
    text, call = call_text(c, [HumanMessage("say hello")], purpose="greet")
    assert text == "hello there"
    assert call.ok and call.role == "judge" and call.purpose == "greet"
    assert call.input_tokens > 0 and call.output_tokens > 0
    assert c.llm.prompts[0][0].content == "say hello"


def test_structured_call_parses_into_the_schema():
    parsed, call = call_structured(client({"verdict": "pass", "reason": "fine"}), Answer, [HumanMessage("x")])
    assert parsed == Answer(verdict="pass", reason="fine") and call.ok


@pytest.mark.parametrize("reply", ["not json at all", {"verdict": "pass"}, ""])
def test_malformed_structured_output_raises_model_error_with_the_failed_call(reply):
    with pytest.raises(ModelError) as caught:
        call_structured(client(reply), Answer, [HumanMessage("x")])
    assert caught.value.call is not None and not caught.value.call.ok


@pytest.mark.parametrize("fault", [TimeoutError("timed out"), ConnectionError("refused")])
def test_transport_faults_become_model_errors(fault):
    with pytest.raises(ModelError, match=type(fault).__name__):
        call_text(client(fault), [HumanMessage("x")])


def test_empty_answer_is_an_error():
    with pytest.raises(ModelError, match="empty"):
        call_text(client("   "), [HumanMessage("x")])


def test_scripted_model_fails_loudly_when_its_script_runs_out():
    model = ScriptedChatModel(["one"])
    model.invoke("first")
    with pytest.raises(AssertionError, match="script is empty"):
        model.invoke("second")


def test_factory_builds_nothing_offline_and_names_the_missing_key(monkeypatch):
    assert model_for("chat", Settings()) is None
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        model_for("chat", Settings(profile="openai"))


def test_factory_sends_max_tokens_to_compatible_servers():
    c = model_for("judge", Settings(profile="local"))
    assert c is not None and c.llm.extra_body == {"max_tokens": 256}
    assert str(c.llm.openai_api_base).startswith("http://127.0.0.1")
