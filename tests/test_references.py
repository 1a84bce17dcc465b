"""Reading a message with the conversation: references to an earlier-named medicine, or to what
the conversation asked the meaning of."""

import pytest

from app.core.medicines import with_international_names
from app.retrieval.references import (
    about_another_medicine,
    before_reference,
    named_medicines,
    refers_back,
    resolve,
    subject_of,
    with_subject,
)


@pytest.mark.parametrize(("message", "topic", "resolved"), [
    ("is it safe with alcohol?", ["What is clozapine?"], "is clozapine safe with alcohol?"),
    ("can I take it with food", ["I started quetiapine last week"], "can I take quetiapine with food"),
    ("does that medicine cause weight gain?", ["tell me about aripiprazole"],
     "does aripiprazole cause weight gain?"),
    ("and the other one?", ["is olanzapine worse than risperidone for weight?"], "and olanzapine?"),
    # an ordinal counts the medicines in the order they were named
    ("what about the second one?", ["side effects of olanzapine and aripiprazole?"], "what about aripiprazole?"),
    ("the former, is it a tablet?", ["risperidone or paliperidone injections?"], "risperidone, is it a tablet?"),
    # a lurasidone the knowledge base never names is still a medicine
    ("how long does it stay in the body", ["my doctor suggested lurasidone"],
     "how long does lurasidone stay in the body"),
])
def test_a_reference_becomes_the_medicine_named_before(message, topic, resolved):
    assert resolve(message, topic) == resolved


@pytest.mark.parametrize(("message", "topic"), [
    ("is it my fault?", ["What is clozapine?"]),  # situational "it"
    ("is it normal to feel tired all day?", ["I take risperidone"]),  # dummy "it"
    ("is olanzapine safe with it?", ["what is clozapine"]),  # names its own medicine
    ("is it safe with alcohol?", ["what are negative symptoms?"]),  # nothing named to refer to
    ("does it hurt?", ["how are depot injections given?"]),  # the topic has moved on from a medicine
    ("what's the second step?", ["olanzapine or aripiprazole?"]),  # an ordinal of something else
    ("and the third one?", ["olanzapine or aripiprazole?"]),  # only two were named
])
def test_no_reference_is_invented(message, topic):
    assert resolve(message, topic) == message


def test_medicines_are_listed_once_most_recent_last():
    assert named_medicines(["clozapine or olanzapine?", "and Clozapine again"]) == ["olanzapine", "clozapine"]
    assert named_medicines(["clozapine or olanzapine?", "and Clozapine again"], latest_last=False) == [
        "clozapine", "olanzapine"]


def test_a_brand_name_is_read_as_the_medicine_it_names():
    assert named_medicines(["my Seroquel and risperidone", "Abilify  Maintena?"]) == [
        "quetiapine", "risperidone", "aripiprazole long-acting injection"]
    assert with_international_names("is Zyprexa like Abilify?") == "is olanzapine like aripiprazole?"
    assert with_international_names("a solid abilifyish plan") == "a solid abilifyish plan"


def test_refers_back():
    assert refers_back("is that normal for someone who has been unwell for a long time?")
    assert not refers_back("what are the early warning signs of relapse?")
    # The "it" of a situation refers to nothing said before.
    assert not refers_back("is it our fault? we split up when he was 10")
    assert not refers_back("is it a relapse?")
    assert refers_back("can you still get it if you've decided not to take medication?")
    # A possessive pronoun or "the … one" stands for something said before too.
    assert refers_back("how do I find out what mine are?")
    assert refers_back("does the weight one wear off?")
    assert not refers_back("is one tablet a day normal?")


def test_a_that_joining_a_clause_refers_to_nothing_said_before():
    assert not refers_back("which meds are the ones that help with voices?")
    assert not refers_back("my doctor said that exercise helps")
    # "that" standing for something keeps leaning back, after a verb or on its own
    assert refers_back("how common is that?")
    assert refers_back("and that worries me")
    assert refers_back("he keeps doing that every night")
    # the reference after a joined clause is the first reference
    assert before_reference("he tried two meds that didn't work, can he get it?") \
        == "he tried two meds that didn't work, can he get "


def test_what_a_message_says_before_its_first_reference():
    assert before_reference("my brother has schizophrenia, does that mean I'll get it too?") \
        == "my brother has schizophrenia, does "
    assert before_reference("is it safe with alcohol?") == "is "
    assert before_reference("what about for kids?") == "what about for kids?"  # no reference at all
    # A phrase the reference completes names what is asked, not what "it" is.
    assert before_reference("side effects of it?") == ""
    assert before_reference("my son has schizophrenia, what are the chances of it") == "my son has schizophrenia"


@pytest.mark.parametrize(("title", "question", "other"), [
    ("Clozapine", "what are the side effects of olanzapine", True),
    ("Clozapine", "does clozapine make you sleepy?", False),
    ("Clozapine", "what are the side effects of antipsychotics?", False),  # no medicine named
    ("Side effects of antipsychotics", "what are the side effects of olanzapine", False),
])
def test_a_source_titled_after_another_medicine_is_about_another_medicine(title, question, other):
    assert about_another_medicine(title, question) is other


@pytest.mark.parametrize(("question", "subject", "many"), [
    ("what are negative symptoms?", "negative symptoms", True),
    ("whats a depot", "depot", False),
    ("What does 'psychosis' mean?", "psychosis", False),
    ("tell me about family intervention", "family intervention", False),
    ("what does an early intervention team do", "early intervention team", False),
    ("What causes schizophrenia?", "", False),  # asks why, not what it is
    ("what should I do?", "", False),
    ("what is it", "", False),  # a pronoun names nothing
])
def test_a_question_asking_what_something_is_names_its_subject(question, subject, many):
    assert subject_of(question) == (subject, many)


@pytest.mark.parametrize(("message", "topic", "resolved"), [
    ("and do they go away once the voices stop?", ["what are negative symptoms?"],
     "and do negative symptoms go away once the voices stop?"),
    ("is it free?", ["What is CBT for psychosis?"], "is CBT for psychosis free?"),
    ("is it common?", ["what is psychosis?", "who gets it?"], "is psychosis common?"),  # the latest definition
    # "one" standing for a thing takes its article
    ("what do you put in one", ["what is a crisis plan?"], "what do you put in a crisis plan"),
    ("can my son get one for free?", ["what is an advance statement"], "can my son get an advance statement for free?"),
])
def test_a_reference_becomes_what_the_conversation_asked_the_meaning_of(message, topic, resolved):
    assert with_subject(message, topic) == resolved


@pytest.mark.parametrize(("message", "topic"), [
    ("is it my fault?", ["what is psychosis?"]),  # situational "it"
    ("do they go away?", ["what is psychosis?"]),  # "they" is not one thing
    ("is it common?", ["why do people get psychosis?"]),  # asked why, not what it is
    ("is olanzapine safe with it?", ["what is clozapine?"]),  # medicines are resolve's
    # the number, "no one", "which one", "one of": not a thing said before
    ("is one enough?", ["what is a crisis plan?"]),
    ("no one told me", ["what is a crisis plan?"]),
    ("which one is best?", ["what is a crisis plan?"]),
    ("one of them said so", ["what is a crisis plan?"]),
])
def test_no_subject_is_invented(message, topic):
    assert with_subject(message, topic) == message
