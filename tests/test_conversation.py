"""Ordinary conversation through the whole graph: greetings, thanks and "what can you do?" get
their own short replies after the crisis screen (never instead of it), and "tell me more" leans
on the conversation so far. `cafbot judges eval` routes messages exactly as a user turn does."""

from __future__ import annotations

import re

import pytest

from app.core.records import InputScreen
from app.core.scenarios import load_scenarios
from app.core.text import split_sentences
from app.prompts import contact_lines, reply
from app.screen import says_little, screen_message, screened_route
from app.small_talk import kind_of
from judges.evaluate import evaluate
from tests.conftest import REPO


@pytest.fixture
def bot(make_bot):
    return make_bot()


def _screened(bot, message: str, *, previous: InputScreen | None = None, has_conversation: bool = False) -> InputScreen:
    """The screen's reading of `message` as a user turn reads it (no screener), after `previous`."""
    return screen_message(message, settings=bot.settings, resources=bot.services.resources, screener=None,
                          llm_allowed=False, has_conversation=has_conversation or previous is not None,
                          previous=previous, earlier=[previous.text] if previous is not None else []).screen


@pytest.mark.parametrize("message", ["hi", "Hello!", "hey there", "good morning"])
def test_a_greeting_gets_a_friendly_hello_with_example_questions(bot, message):
    trace = bot.ask(bot.new_thread(), message)
    assert trace.route == "small_talk" and trace.generator == "fixed"
    assert trace.answer.startswith("Hello!") and "sounds serious" not in trace.answer
    examples = [line[2:] for line in trace.answer.splitlines() if line.startswith("- ")]
    # each source's headline question, from the core topics a newcomer should hear about first
    headlines = [source.questions[0] for source in bot.services.identifier.knowledge_base if source.questions]
    assert len(examples) == 3 and set(examples) <= set(headlines[:12])


def test_what_can_you_do_says_what_the_bot_offers_and_is_not(bot):
    trace = bot.ask(bot.new_thread(), "what can you do?")
    assert trace.route == "small_talk"
    assert "can't give advice about your own situation" in " ".join(trace.answer.split())
    assert "\n- " in trace.answer


def test_a_four_turn_chat_reads_like_a_conversation(bot):
    thread = bot.new_thread()
    routes = [bot.ask(thread, m).route for m in ("hi", "what is schizophrenia?", "thanks!", "bye")]
    assert routes == ["small_talk", "answer", "small_talk", "small_talk"]
    replies = [m.content for m in bot.messages(thread)[1::2]]
    assert replies[2].startswith("You're welcome") and replies[3].startswith("Take care")


@pytest.mark.parametrize("message", ["thnks so much", "thank u soooo much", "thx, that helpd"])
def test_thanks_typed_in_a_hurry_is_small_talk_and_hears_you_are_welcome(bot, message):
    # Read as the screen's English speller reads it: as written, "thnks" is no word of thanks, and
    # the reply would offer example questions instead.
    trace = bot.ask(bot.new_thread(), message)
    assert trace.route == "small_talk" and trace.answer.startswith("You're welcome"), trace.answer


@pytest.mark.parametrize("message", ["gonna head off now, night", "catch you tomorrow"])
def test_a_goodbye_in_no_word_of_its_own_is_read_by_the_learned_layer(bot, message):
    trace = bot.ask(bot.new_thread(), message)
    assert trace.route == "small_talk" and trace.answer == reply("small_talk_goodbye"), trace.answer


def test_small_talk_is_told_apart_by_its_words_first_then_by_the_learned_reading():
    assert kind_of("thanks so much, bye!", learned="thanks") == "goodbye"  # the words decide
    assert kind_of("gonna head off now, night", learned="farewell") == "goodbye"
    assert kind_of("that's sorted me out", learned="thanks") == "thanks"
    assert kind_of("nice one", learned="small_talk") == "other"


@pytest.mark.parametrize("message", ["is this chat being recorded?", "who can see what i write here",
                                     "do u save my messages", "thanks. is this confidential?",
                                     "is this chat private? will my doctor see what i write here",
                                     "do you keep my messages"])
def test_a_question_about_privacy_hears_what_is_kept_who_can_read_it_and_how_to_delete_it(bot, message):
    trace = bot.ask(bot.new_thread(), message)
    assert trace.route == "small_talk", trace.route
    assert "saved by the service" in trace.answer and "Delete this conversation" in trace.answer, trace.answer
    assert "AI model" not in trace.answer  # offline: the messages go nowhere else


def test_a_question_about_health_records_is_answered_from_the_knowledge_base_not_about_this_chat(bot):
    trace = bot.ask(bot.new_thread(), "is my health information private")
    assert trace.route == "answer" and "S29" in trace.citations, trace.answer


def test_with_a_model_configured_the_privacy_reply_says_the_messages_go_to_it_too(make_bot):
    bot = make_bot(models={"chat": {"provider": "openai", "model": "any", "base_url": "http://127.0.0.1:9/v1"}})
    trace = bot.ask(bot.new_thread(), "is this private?")
    assert "AI model service" in trace.answer, trace.answer


def test_small_talk_never_hides_a_crisis(bot):
    trace = bot.ask(bot.new_thread(), "hi. i want to die")
    assert trace.route == "crisis"


def test_the_turn_after_a_crisis_stays_on_the_crisis_route_then_the_conversation_goes_on(bot):
    thread = bot.new_thread()
    assert bot.ask(thread, "i have the pills in my hand and i'm going to take them all tonight").route == "crisis"
    after = bot.ask(thread, "forget i said anything lol")
    assert after.route == "crisis" and after.answer.startswith("I'm still thinking about what you told me")
    assert bot.settings.crisis_contacts[0].name in after.answer
    answer = bot.ask(thread, "what is clozapine?")  # answered, not withheld, with the contacts again
    assert answer.route == "answer" and answer.generator != "fixed" and "[S11]" in answer.answer
    assert answer.answer.endswith(reply("crisis_reminder", contacts=contact_lines(bot.settings.crisis_contacts)))
    assert "worried me" not in (answer.draft or "")  # fixed text added after the filter, not judged as the draft


@pytest.mark.parametrize(("message", "stays"), [
    ("should I stop taking it straight away?", False),  # a question of its own: answered
    ("what do I say to the midwife?", False),
    ("forget it", True),  # a brush-off asks nothing: the contacts again
    ("it was a joke lol", True),
    ("ok", True),
])
def test_after_an_unsure_alarm_a_question_of_its_own_is_answered_a_brush_off_is_not(bot, message, stays):
    """Only the learned layer read the message before as a crisis, below its confident line: the
    next message keeps the crisis route if it asks nothing, as after a sure alarm; a question of
    its own is answered unless it carries the danger, alone or read with the message before
    (tests/test_context_screen.py)."""
    def after(previous: InputScreen) -> str:
        return _screened(bot, message, previous=previous).route

    unsure = InputScreen(text="…", route="crisis", crisis_layer="model", crisis_score=0.4, crisis_unsure=True)
    sure = unsure.model_copy(update={"crisis_score": 0.9, "crisis_unsure": False})
    assert (after(unsure) == "crisis") is stays
    if stays:
        assert after(sure) == "crisis"
        assert after(unsure.model_copy(update={"crisis_layer": "pattern:pills_tonight", "crisis_unsure": False})) == "crisis"


@pytest.mark.parametrize(("before", "message", "own_case"), [
    # one request said in two messages: the situation, then what to do about it
    ("I've been on risperidone for a year", "is it ok to have a few beers at my cousin's wedding?", True),
    # a general question after a statement stays one
    ("my team want me to try a depot instead of tablets", "does it hurt?", False),
    ("I'm on clozapine", "what are the side effects?", False),
    ("my husband takes aripiprazole", "does it cause weight gain?", False),
    ("my son has just been diagnosed", "what are negative symptoms?", False),
    # after a question nothing was stated: the message is read alone
    ("what is risperidone?", "is it ok to have a few beers at my cousin's wedding?", False),
])
def test_a_question_is_read_with_the_statement_just_before_it(bot, before, message, own_case):
    small_talk = _screened(bot, "hello there")
    assert not _screened(bot, message, previous=small_talk).personal_advice  # read alone
    assert _screened(bot, message, previous=_screened(bot, before)).personal_advice is own_case
    if own_case:
        thread = bot.new_thread()
        bot.ask(thread, before)
        trace = bot.ask(thread, message)
        assert trace.route == "boundary", trace.answer


@pytest.mark.parametrize(("earlier", "own_case"), [
    # the situation stated, a general question between, then a request about one's own case
    (["I've been on risperidone for a year", "does it make you sleepy?"], True),
    (["I've been on risperidone for a year", "does it make you sleepy?", "what about weight?"], True),
    # stated longer ago than the last few messages: read alone
    (["I've been on risperidone for a year", "does it make you sleepy?", "what about weight?",
      "and shaking?"], False),
    # only questions before it: nothing stated to read it with
    (["what is risperidone?", "does it make you sleepy?"], False),
])
def test_a_question_is_read_with_the_latest_statement_a_few_messages_back(bot, earlier, own_case):
    message = "is it ok to have a few beers at my cousin's wedding?"
    screen = screen_message(message, settings=bot.settings, resources=bot.services.resources, screener=None,
                            llm_allowed=False, has_conversation=True, earlier=earlier).screen
    assert screen.personal_advice is own_case
    if own_case:
        thread = bot.new_thread()
        for said in earlier:
            bot.ask(thread, said)
        assert bot.ask(thread, message).route == "boundary"


def test_statements_add_to_the_situation_a_question_with_no_topic_of_its_own_is_answered_in(bot):
    # Neither statement asks anything; the question names nothing. What it asks about is the two
    # statements together: quitting smoking raises clozapine levels.
    thread = bot.new_thread()
    for statement in ("my sister is on clozapine", "she has decided to stop smoking after new year"):
        bot.ask(thread, statement)
    trace = bot.ask(thread, "what should she keep an eye on?")
    assert "clozapine" in trace.resolved_question and "smoking" in trace.resolved_question, trace.resolved_question
    assert trace.route == "answer" and re.search(r"levels?.{0,40}rise", trace.answer), trace.answer
    assert "S11" in trace.citations or "S23" in trace.citations, trace.citations


def test_only_a_message_with_few_words_of_its_own_is_answered_on_the_conversation():
    assert says_little("any tips?") and says_little("anything we need to watch out for?")
    # Its own words say what is asked: "who to talk to", not what the conversation was about.
    assert not says_little("if i cant talk to mums team then who do i talk to")


def test_a_statement_that_could_be_about_several_topics_gets_its_likeliest_not_a_menu(bot):
    # It asks nothing, so "did you mean…?" would ask back a question nobody asked.
    trace = bot.ask(bot.new_thread(), "I'm on clozapine")
    assert trace.identification is not None and len(trace.identification.candidates) > 1
    assert trace.route == "answer" and "S11" in trace.citations, trace.answer
    assert "Did you mean" not in trace.answer


def test_tell_me_more_continues_the_same_topic_with_something_new(bot):
    thread = bot.new_thread()
    first = bot.ask(thread, "What are the side effects of clozapine?")
    more = bot.ask(thread, "tell me more")
    assert first.route == more.route == "answer"
    assert set(more.citations) & set(first.citations)
    reminder = reply("verification_reminder")
    said = [s for s in split_sentences(first.answer.replace(reminder, "")) if len(s) > 30]
    assert said and not [s for s in said if s in more.answer], "a follow-up repeats what was already said"


def test_a_misspelt_follow_up_is_answered_as_the_words_meant(bot):
    """Retrieval corrects "alchol"; the sentences of the answer are chosen by the corrected words
    too, so a typo gets the answer the spelled-right question gets."""
    answers = []
    for follow_up in ("is it safe with alcohol?", "is it safe with alchol?"):
        thread = bot.new_thread()
        bot.ask(thread, "what is clozapine")
        answers.append(bot.ask(thread, follow_up).answer)
    assert "alcohol" in answers[0].lower()
    assert answers[1] == answers[0]


@pytest.mark.parametrize(("opening", "follow_up", "named"), [
    ("whats olanzapine", "can I stop it?", "can I stop olanzapine?"),
    ("what is clozapine", "can i cut down on it?", "can i cut down on clozapine?"),
])
def test_a_request_referring_back_to_a_medicine_gets_the_card_its_named_form_gets(bot, opening, follow_up, named):
    """The kind of a request is read with the medicine its "it" stands for: "can I stop it?" after
    olanzapine asks to stop olanzapine (read alone, "it" could be a side effect)."""
    alone = bot.ask(bot.new_thread(), named)
    thread = bot.new_thread()
    bot.ask(thread, opening)
    trace = bot.ask(thread, follow_up)
    assert alone.route == trace.route == "boundary" and alone.card is not None
    assert trace.card == alone.card, trace.answer

def test_a_follow_up_asking_for_a_kind_of_answer_is_composed_on_its_own_words(bot):
    """"How often…?" after a topic: more from the topic's sources, chosen for a frequency, not
    the first question's words again."""
    thread = bot.new_thread()
    bot.ask(thread, "what's a long acting injection? the team said it might suit my daughter")
    trace = bot.ask(thread, "how often would she have to have it")
    assert trace.route == "answer" and not trace.fallback_used
    assert re.search(r"every (week|month|\d)", trace.answer), trace.answer


@pytest.mark.parametrize(("opening", "follow_up", "source"), [
    ("whats NMS", "can it be permanent?", "S12"),
    ("how are depot injections given?", "does it hurt?", "S10"),
])
def test_a_follow_up_unsure_on_its_own_words_stays_with_the_last_answers_source(bot, opening, follow_up, source):
    """Its words alone would offer a menu; the conversation has said what "it" is."""
    thread = bot.new_thread()
    assert source in bot.ask(thread, opening).citations
    trace = bot.ask(thread, follow_up)
    assert trace.route == "answer" and trace.identification.outcome == "clear", trace.answer
    assert trace.citations and set(trace.citations) <= {source}, trace.answer


def test_it_in_a_follow_up_is_what_the_last_answer_was_about_not_a_neighbouring_section(bot):
    """The side-effects source says of tardive dyskinesia "It can be long-lasting"; quoted after
    NMS, its "it" would read as NMS. The answer stays with what the NMS section says (its first
    answer said it all, the urgent-help instruction too, so it is said again)."""
    thread = bot.new_thread()
    assert "Neuroleptic malignant syndrome" in bot.ask(thread, "whats NMS").answer
    trace = bot.ask(thread, "can it be permanent?")
    assert "If these happen, get urgent medical help" in trace.answer, trace.answer
    assert "long-lasting" not in trace.answer, trace.answer


def test_a_follow_up_answered_by_what_the_last_answer_said_hears_it_again(bot):
    """"It can be long-lasting" was said of tardive dyskinesia in passing; "can it be permanent?"
    is answered with it, not with whatever the source had left."""
    thread = bot.new_thread()
    assert "long-lasting" in bot.ask(thread, "what's tardive dyskinesia").answer
    trace = bot.ask(thread, "can it be permanent?")
    assert trace.route == "answer" and "long-lasting" in trace.answer, trace.answer


def test_it_refers_to_the_topic_the_conversation_is_on_not_an_older_medicine(bot):
    thread = bot.new_thread()
    bot.ask(thread, "what is clozapine?")
    bot.ask(thread, "how are depot injections given?")
    trace = bot.ask(thread, "does it hurt?")
    assert "clozapine" not in trace.resolved_question.lower() and "S11" not in trace.citations, trace.answer


def test_it_refers_to_a_medicine_named_with_a_typo_as_retrieval_read_it(bot):
    thread = bot.new_thread()
    bot.ask(thread, "what is risperdone")
    trace = bot.ask(thread, "does it cause weight gain?")
    assert "risperidone" in trace.resolved_question.lower(), trace.resolved_question


def test_judges_eval_routes_every_message_as_a_user_turn_does(bot):
    """One evaluation path: the eval's routes are the graph's, scenario by scenario."""
    scenarios = [s for s in load_scenarios(REPO / "scenarios" / "screen" / "train")
                 if not s.history][::40]
    services = bot.services

    def read(message: str, has_conversation: bool = False) -> InputScreen:
        return _screened(bot, message, has_conversation=has_conversation)

    def screen(message: str, has_conversation: bool) -> str:
        return screened_route(read(message, has_conversation))

    report = evaluate(scenarios, screen, review=lambda ctx: pytest.fail("no drafts here"), resolve=lambda _: None)
    assert len(report.per_scenario) == len(scenarios) >= 40
    for scenario, result in zip(scenarios, report.per_scenario, strict=True):
        trace = bot.ask(bot.new_thread(), scenario.user)
        graph_route = {"answer": "question", "clarify": "question", "no_match": "question"}.get(trace.route, trace.route)
        if graph_route == "boundary" and result.route == "question":  # a boundary card decided
            assert next(c for c in services.cards.cards if c.id == trace.card).kind == "boundary"
        elif result.route == "crisis" and graph_route == "question":
            # a reaction to a medicine the sources describe: medical help first, then an answer
            assert trace.route == "answer" and read(scenario.user).crisis_kind == "medical_emergency"
        elif result.route == "boundary" and graph_route == "question":
            # someone unwell now: help today, then an answer; else no source to answer from
            assert trace.route == "answer" if read(scenario.user).urgent else trace.route in ("clarify", "no_match")
        else:
            assert result.route == graph_route, (scenario.id, scenario.user)


@pytest.mark.parametrize("message", ["my daughter wont take her meds", "my daughter won't take her medicine"])
def test_a_card_on_the_source_retrieval_chose_answers_a_looser_wording_of_its_questions(bot, message):
    """0.70 from the card's nearest question ("how do I get my mum to take her medication"), as
    close as a card on getting help today that draws on other sources; retrieval's choice of the
    medicines source settles it."""
    trace = bot.ask(bot.new_thread(), message)
    assert trace.card == "A102" and trace.answer.startswith("Families often worry"), trace.answer


@pytest.mark.slow
def test_a_follow_up_about_the_medicine_before_hears_what_answers_it_said_before_or_not(make_bot):
    """"how often do you need blood tests on it?" after the clozapine answer: clozapine's blood
    tests, though that answer said them, not the general health checks that share the words."""
    bot = make_bot()
    thread = bot.new_thread()
    bot.ask(thread, "what is clozapine?")
    answer = bot.ask(thread, "how often do you need blood tests on it?").answer
    first = split_sentences(answer)[0]
    assert "clozapine" in first.lower() and "blood test" in first.lower(), answer


@pytest.mark.slow
def test_a_medicine_no_source_speaks_of_is_named_before_the_general_answer(make_bot):
    bot = make_bot()
    notice = reply("medicine_not_covered", medicines="lithium")
    assert bot.ask(bot.new_thread(), "is lithium safe in pregnancy?").answer.startswith(notice)
    assert reply("medicine_not_covered", medicines="clozapine") not in \
        bot.ask(bot.new_thread(), "what are the side effects of clozapine?").answer
    # "it" after a question nothing covered is the medicine that question named.
    thread = bot.new_thread()
    bot.ask(thread, "what is clozapine?")
    bot.ask(thread, "tell me about lithium")
    follow_up = bot.ask(thread, "what are the side effects of it?")
    assert "lithium" in follow_up.resolved_question and follow_up.answer.startswith(notice), follow_up.answer
    # Nor is a medicine no source speaks of read with the conversation's topic.
    thread = bot.new_thread()
    bot.ask(thread, "what are negative symptoms?")
    assert bot.ask(thread, "tell me about lithium").route == "no_match"


@pytest.mark.slow
@pytest.mark.parametrize(("question", "covered"), [
    ("what diet should my dad follow for his diabetes?", False),
    ("my mum has dementia, how can i help her memory?", False),
    ("does schizophrenia raise the risk of diabetes?", True),  # says the service's own condition
    ("can olanzapine cause diabetes?", True),  # and a medicine
])
def test_a_question_about_another_illness_alone_is_not_covered(make_bot, question, covered):
    bot = make_bot()
    trace = bot.ask(bot.new_thread(), question)
    assert (trace.route != "no_match") is covered, (trace.route, trace.answer)


def test_another_illness_is_named_unless_the_service_is_about_it():
    from app.core.conditions import other_conditions

    assert other_conditions("my dad is diabetic", ["schizophrenia", "psychosis"]) == ["diabetes"]
    assert other_conditions("Alzheimer's and schizophrenia", ["schizophrenia"]) == []
    assert other_conditions("what helps with diabetes?", ["diabetes"]) == []
    assert other_conditions("I'm a bit of a stroke of luck person", ["schizophrenia"]) == []
