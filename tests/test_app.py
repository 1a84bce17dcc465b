"""The Streamlit app's page logic with Streamlit's AppTest (no browser): the real chatbot on the
offline default, the real stores, one data dir for the module. tests/test_app_browser.py drives
the same app in Chromium."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app.core.access import hash_code
from app.core.config import Settings
from app.session import Conversations
from app.ui.runtime import staff_limiter
from tests.conftest import app_environment

pytestmark = pytest.mark.slow

SCRIPT = "app/ui/streamlit_app.py"
STAFF_CODE = "correct horse battery"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    with app_environment(tmp_path_factory.mktemp("app-data"),
                         CAFBOT_UI__STAFF_CODE_HASH=hash_code(STAFF_CODE)) as path:
        yield path


@pytest.fixture
def app(data_dir, monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    monkeypatch.setenv("CAFBOT_DATA_DIR", str(data_dir))
    at = AppTest.from_file(str(root / SCRIPT), default_timeout=180)
    return at.run()


def ask(at: AppTest, text: str) -> AppTest:
    at.chat_input[0].set_value(text).run()
    assert not at.exception, at.exception
    return at


def said(at: AppTest, role: str) -> list[str]:
    return [(m.text if role == "user" else m.markdown)[0].value for m in at.chat_message if m.name == role]


def labels(at: AppTest, prefix: str) -> list[str]:
    return [b.label for b in at.button if (b.key or "").startswith(prefix)]


def test_first_visit_says_what_the_bot_is_and_offers_help_now(app):
    assert "I am not a doctor" in app.info[0].value
    assert len(labels(app, "starter-")) == 3
    assert "thread" not in app.query_params  # no conversation is created by looking
    help_now = next(e for e in app.sidebar.expander if e.label == "Need help now?")
    assert "emergency" in " ".join(m.value for m in help_now.markdown).lower()


def test_a_question_gets_a_cited_answer_with_its_source_to_open(app):
    ask(app, "What is clozapine?")
    assert app.query_params["thread"]  # the conversation is in the URL
    assert said(app, "user") == ["What is clozapine?"]
    answer = said(app, "assistant")[0]
    assert "[S11]" in answer and "clozapine" in answer.lower()
    source = next(e for e in app.expander if e.label.startswith("Source S11"))
    assert "clozapine" in source.markdown[0].value.lower() and len(source.markdown[0].value) > 500


def test_suggestions_are_never_repeated_or_already_asked(app):
    ask(app, "What is clozapine?")
    seen, asked = set(), {"what is clozapine?"}
    for _ in range(3):
        offered = labels(app, "suggest-")
        assert 2 <= len(offered) <= 3
        assert not seen & set(offered) and not asked & {o.lower() for o in offered}
        seen |= set(offered)
        next(b for b in app.button if b.label == offered[0]).click().run()
        asked.add(offered[0].lower())
        assert said(app, "user")[-1] == offered[0]  # the suggestion was asked


def test_did_you_mean_options_are_buttons_that_ask(app):
    ask(app, "medicine")
    options = labels(app, "clarify-")
    assert len(options) >= 2
    next(b for b in app.button if b.label == options[1]).click().run()
    assert said(app, "user")[-1] == options[1]
    assert "Did you mean" not in said(app, "assistant")[-1]
    assert "[S" in said(app, "assistant")[-1]  # answered, from the chosen source


def test_feedback_and_its_comment_are_saved_with_the_turn(app, data_dir):
    ask(app, "What are negative symptoms?")
    thread = app.query_params["thread"]
    app.feedback[0].set_value(0).run()  # thumbs down
    app.text_input(key="comment-text-1").input("It did not say how long they last")
    app.button(key="FormSubmitter:comment-1-Send").click().run()
    with Conversations(Settings(data_dir=data_dir)) as stores:
        saved = stores.turn_log.feedback(thread)[1]
    assert saved.helpful is False and saved.comment == "It did not say how long they last"


def test_a_reload_shows_the_same_conversation_and_an_unknown_one_is_said_so(app, data_dir):
    ask(app, "hi")
    ask(app, "What are hallucinations?")
    thread = app.query_params["thread"]
    again = AppTest.from_file(app._script_path, default_timeout=180)
    again.query_params["thread"] = thread
    again.run()
    assert said(again, "user") == ["hi", "What are hallucinations?"]
    gone = AppTest.from_file(app._script_path, default_timeout=180)
    gone.query_params["thread"] = "nosuchthread"
    gone.run()
    assert "no longer here" in gone.warning[0].value and not gone.chat_message


def test_delete_removes_the_conversation_from_every_store(app, data_dir):
    ask(app, "What is psychosis?")
    thread = app.query_params["thread"]
    next(b for b in app.sidebar.button if b.label == "Delete this conversation").click().run()
    next(b for b in app.sidebar.button if b.label == "Yes, delete it").click().run()
    assert "thread" not in app.query_params and not app.chat_message
    with Conversations(Settings(data_dir=data_dir)) as stores:
        assert not stores.exists(thread)  # neither the turn log nor the checkpointer knows it


def sign_in(at: AppTest, code: str) -> AppTest:
    at.sidebar.text_input[0].input(code)
    at.button(key="FormSubmitter:staff-sign-in-Sign in").click().run()
    return at


def test_the_staff_trace_is_hidden_until_the_right_code_is_given(app):
    ask(app, "What is clozapine?")
    assert not app.toggle and not [e for e in app.expander if e.label.startswith("Trace")]
    sign_in(app, "not the code")
    assert "not right" in app.sidebar.error[0].value and not app.toggle
    sign_in(app, STAFF_CODE)
    app.toggle[0].set_value(True).run()
    trace = next(e for e in app.expander if e.label.startswith("Trace"))
    assert "route" in str(trace.table[0].value)
    staff_limiter.clear()


def settings_page_as(signed_in: bool) -> AppTest:
    def page():
        from app.ui import settings_page

        settings_page.render()

    at = AppTest.from_function(page, default_timeout=180)
    at.session_state["staff_signed_in"] = signed_in
    return at.run()


def test_the_settings_page_shows_staff_the_masked_configuration_and_model_health(data_dir):
    at = settings_page_as(True)
    config = at.json[0].value
    assert "****(set)" in config and STAFF_CODE not in config and "scrypt$" not in config
    assert "not used (offline)" in str(at.table[0].value)
    refused = settings_page_as(False)
    assert "staff only" in refused.error[0].value and not refused.json


def test_wrong_codes_are_rate_limited(app):
    for _ in range(Settings().ui.staff_attempts):
        sign_in(app, "wrong code!")
    sign_in(app, STAFF_CODE)  # even the right code waits out the lockout
    assert "Too many wrong codes" in app.sidebar.error[0].value and not app.toggle
    staff_limiter.clear()


def test_no_staff_sign_in_without_a_configured_code(data_dir, monkeypatch):
    monkeypatch.delenv("CAFBOT_UI__STAFF_CODE_HASH")

    def page():
        from app.core.config import Settings
        from app.ui import staff

        staff.sidebar(Settings())

    at = AppTest.from_function(page).run()
    assert not at.expander and not at.text_input and not at.toggle
