"""Source identification: the three outcomes, multi-part questions, follow-ups, the summary
strategy, and the evaluation metrics (real model, real Chroma in tmp_path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.config import Settings
from app.core.medicines import international_name
from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.core.spelling import Speller, typing_distance
from app.kb import load_knowledge_base
from app.retrieval.evaluate import recall_at, reciprocal_rank
from app.retrieval.parts import split_parts
from app.retrieval.summaries import ChosenSource, SourceChoice, SummaryChooser
from tests.fakes import write_sources

SOURCES = {
    "A01": ("Sleep problems", "Why sleep goes wrong and how to sleep better at night.", "sleep, insomnia, bedtime",
            "Poor sleep can be an early sign of becoming unwell. Keep a regular bedtime, avoid caffeine in "
            "the evening and put screens away an hour before bed. Tell your team if you sleep far more or "
            "far less than usual."),
    "A02": ("Clozapine blood tests", "Why people taking clozapine need regular blood tests.", "clozapine, blood tests",
            "Clozapine can lower the number of white blood cells that fight infection. Blood tests are "
            "weekly at first and less often later. Report a fever or sore throat straight away."),
    "A03": ("Coping with voices", "Practical ways to cope with hearing voices.", "voices, hallucinations, coping",
            "Many people who hear voices find distraction helps: humming, music through headphones, or "
            "talking to someone they trust. Hearing voices groups offer support from peers. Tell your "
            "team if the voices tell you to harm yourself."),
    "A04": ("Returning to work", "Going back to a job or study after being unwell.", "work, employment, job",
            "Supported employment helps people find and keep a job. You can ask your employer for "
            "reasonable adjustments such as part-time hours. Telling them about the illness is your choice."),
    "A05": ("Healthy eating", "Food, appetite and weight while taking medicines.", "diet, weight, appetite",
            "Some medicines increase appetite and weight. Eating vegetables, drinking water instead of "
            "sugary drinks and regular meals can help keep your weight steady."),
}


def build_kb(folder: Path) -> Path:
    return write_sources(folder, SOURCES)


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> Settings:
    root = tmp_path_factory.mktemp("identify")
    return Settings(knowledge_base=build_kb(root / "kb"), data_dir=root / "data")


@pytest.fixture(scope="module")
def identifier(settings, embedder):
    from app.retrieval import open_identifier

    return open_identifier(settings, embedder)


def ids(identification) -> list[str]:
    return [c.source_id for c in identification.candidates]


# -- pure functions ---------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("what is clozapine", ["what is clozapine"]),
    ("how do the injections work, and will they make me put on weight?",
     ["how do the injections work", "will they make me put on weight?"]),
    ("is it genetic? also, how is it diagnosed", ["is it genetic?", "how is it diagnosed"]),
    ("My son was diagnosed. What treatment will he get?", ["My son was diagnosed. What treatment will he get?"]),
    ("is it my fault? i smoked weed as a teenager", ["is it my fault? i smoked weed as a teenager"]),
    ("1. what is clozapine\n2. how can I sleep better\n3. can I work", ["what is clozapine", "how can I sleep better", "can I work"]),
    ("bloods, weight, and blood pressure checks how often", ["bloods, weight, and blood pressure checks how often"]),
    ("how do i sleep better; what helps with voices", ["how do i sleep better", "what helps with voices"]),
    ("", []),
])
def test_split_parts(text, expected):
    assert split_parts(text, min_words=3, max_parts=4) == expected


def test_split_parts_respects_max_parts():
    parts = split_parts("what is a? what is b? what is c? what is d? what is e?", max_parts=3)
    assert len(parts) == 3 and parts[-1] == "what is c? what is d? what is e?"


def test_speller_corrects_only_unknown_words():
    speller = Speller(["schizophrenia", "clozapine", "weather", "whether"], known_words=["weather"])
    assert speller.correct("is skitzophrenia treated with clozapin") == "is schizophrenia treated with clozapine"
    assert speller.correct("the weather today") == "the weather today"
    assert speller.correct("Clozapin") == "clozapine"


def test_a_long_word_english_has_never_seen_may_be_further_from_its_letters():
    """0.72 by letters; a medicine's name is never read so (see the test on medicines the
    knowledge base does not name, below)."""
    speller = Speller(["schizophrenia", "relationships"])
    assert speller.correct("my mum has skitzofrenia") == "my mum has schizophrenia"
    assert speller.correct("my mum has skitsofrenia") == "my mum has skitsofrenia"  # 0.64: too far


def test_a_word_spelt_as_it_sounds_is_read_by_sound_but_a_real_word_is_not():
    vocabulary = ["injection", "medication", "frightened", "depot"]
    assert Speller(vocabulary).correct("a depo injecshun") == "a depot injecshun"  # too far by letters
    by_sound = Speller(vocabulary, phonetic=True)
    assert by_sound.correct("a depo injecshun") == "a depot injection"
    assert by_sound.correct("my medikashun") == "my medication"
    # "fortnight" sounds like "frightened" to Metaphone, but it is an English word: left alone.
    assert by_sound.correct("every fortnight") == "every fortnight"


def test_texting_forms_are_written_out_but_the_knowledge_base_s_own_words_are_not():
    informal = Speller(["cause", "violent", "shed"], informal=True)
    assert informal.correct("is she gonna be violent") == "is she going to be violent"
    assert informal.correct("idk, dont wanna") == "i do not know, do not want to"
    assert informal.correct("the cause") == "the cause"  # not "'cause" (because)
    assert informal.correct("hes not been to his dr appt") == "he is not been to his doctor appointment"
    assert informal.correct("the shed") == "the shed"  # a word it uses, not "she'd"
    assert Speller(["violent"]).correct("gonna") == "gonna"  # only where asked for


def test_the_english_speller_reads_common_english_and_leaves_rare_real_words_alone():
    """The input screen's reading: among equally close words the one English uses far more often;
    a word English itself uses is a word of its own, however close to a commoner one."""
    english = Speller(["thinks", "clozapine", "dose"], english=True)
    assert english.correct("thnks so much") == "thanks so much"  # not the knowledge base's "thinks"
    assert english.correct("shuold i have two tomorow morning") == "should i have two tomorrow morning"
    assert english.correct("im halving my dose") == "im halving my dose"  # not "having"
    assert english.correct("is clozapin safe") == "is clozapine safe"  # the knowledge base's words too
    assert english.correct("slept thru it, dont know") == "slept thru it, dont know"  # texting forms stay
    # Nearest by how people mistype: a neighbouring key is a smaller slip than a letter lost.
    assert english.correct("next momth") == "next month"  # not "moth", nearer by letters


def test_a_slip_of_typing_is_nearer_than_any_other_change_of_a_letter():
    assert typing_distance("month", "momth") == typing_distance("should", "shuold") == 0.5
    assert typing_distance("tomorrow", "tomorow") == typing_distance("tomorow", "tomorrow") == 0.5
    assert typing_distance("moth", "momth") == typing_distance("month", "mokth") == 1.0  # "k" is far from "n"
    assert typing_distance("dose", "dose") == 0.0
    assert Speller(["thinks"]).correct("thnks") == "thinks"  # the knowledge base's words only


@pytest.mark.slow
def test_a_question_in_texting_words_is_found_as_if_written_out(default_identifier):
    """"gonna" is no word of the knowledge base: left as it is, it would carry half the meaning of
    a short question, and "is she gonna be violent" would look like one the sources do not cover."""
    identify = default_identifier.identify
    texting, written = identify("is she gonna be violent"), identify("is she going to be violent")
    assert texting.outcome == written.outcome == "clear", (texting, written)
    assert texting.candidates[0].source_id == written.candidates[0].source_id == "S28"


def test_metrics():
    assert recall_at(["S1"], ["S2", "S1"], 1) == 0.0 and recall_at(["S1"], ["S2", "S1"], 3) == 1.0
    assert recall_at(["S1", "S2"], ["S2", "S9", "S1"], 1) == 1.0  # capped at k
    assert recall_at(["S1", "S2"], ["S2", "S9", "S8"], 3) == 0.5
    assert reciprocal_rank(["S1"], ["S2", "S1"]) == 0.5 and reciprocal_rank(["S1"], []) == 0.0


# -- identification ---------------------------------------------------------------------------
@pytest.mark.slow
def test_clear_match(identifier, settings):
    found = identifier.identify("How often do I need blood tests on clozapine?")
    assert found.outcome == "clear"
    assert ids(found)[0] == "A02"
    assert found.candidates[0].confidence >= settings.retrieval.clear_threshold
    assert found.candidates[0].title == "Clozapine blood tests"
    assert found.parts == ["How often do I need blood tests on clozapine?"]
    assert found.latency_ms > 0


@pytest.mark.slow
def test_no_match_for_unrelated_questions(identifier, settings):
    for question in ("How do I renew my passport online?", "Who won the football last night?"):
        found = identifier.identify(question)
        assert found.outcome == "none", (question, found)
        assert found.candidates == []


@pytest.mark.slow
def test_middling_match_offers_candidates(identifier, settings):
    found = identifier.identify("help")  # near coping with voices, not clearly
    assert found.outcome == "middling"
    assert ids(found)[0] == "A03"
    assert 1 <= len(found.candidates) <= settings.retrieval.top_k
    r = settings.retrieval
    assert all(c.confidence < r.clear_threshold for c in found.candidates)
    assert found.candidates[0].confidence >= r.none_threshold


@pytest.mark.slow
def test_one_word_that_says_what_is_wanted_is_answered(identifier):
    """"What is clozapine?" asks for a definition. "Clozapine" alone is too little to be sure
    which source's side of it is wanted, but here one source is all it could be: a menu of one
    would offer no choice (with several, see the menu rows of test_answer_table.py)."""
    found = identifier.identify("what is clozapine?")
    assert found.outcome == "clear" and ids(found)[0] == "A02"
    alone = identifier.identify("clozapine")
    assert alone.outcome == "clear" and ids(alone) == ["A02"]


@pytest.mark.slow
def test_words_the_sources_never_use_weigh_by_the_meaning_they_carry(identifier):
    """An ordinary word the sources happen never to use ("actually", "literally") barely moves a
    question's meaning, so it does not make a covered question look uncovered; the word that is
    the question's topic ("passport") does."""
    plain = identifier.identify("How often do I need blood tests on clozapine?")
    padded = identifier.identify("Honestly, how often do I actually need blood tests on clozapine, literally?")
    assert padded.outcome == plain.outcome == "clear" and ids(padded)[0] == "A02"
    assert padded.candidates[0].confidence > plain.candidates[0].confidence - 0.1
    assert identifier.identify("How often do I need to renew my passport?").outcome == "none"


@pytest.mark.slow
def test_thresholds_come_from_settings(settings, embedder):
    from app.retrieval import SourceIdentifier
    from app.retrieval.index import ChunkIndex

    strict = settings.model_copy(deep=True)
    strict.retrieval.clear_threshold = 1.0
    kb = load_knowledge_base(strict.knowledge_base)
    index = ChunkIndex(kb, strict, embedder=embedder)
    index.sync()
    question = "How often do I need blood tests on clozapine?"
    found = SourceIdentifier(kb, index, strict).identify(question)
    assert found.outcome == "middling" and ids(found)[0] == "A02"
    assert all(c.confidence < 1.0 for c in found.candidates)

    strict.retrieval.none_threshold = 1.0
    assert SourceIdentifier(kb, index, strict).identify(question).outcome == "none"


@pytest.mark.slow
def test_with_settings_shares_the_index_and_applies_new_thresholds(identifier, settings):
    strict = settings.model_copy(deep=True)
    strict.retrieval.clear_threshold = 1.0
    twin = identifier.with_settings(strict)
    assert twin.index is identifier.index and twin.knowledge_base is identifier.knowledge_base
    question = "How often do I need blood tests on clozapine?"
    assert twin.identify(question).outcome == "middling"
    assert identifier.identify(question).outcome == "clear"  # the original is untouched


@pytest.mark.slow
def test_multi_part_question_finds_a_source_for_each_part(identifier):
    found = identifier.identify("What can I do about the voices, and is there anything to help me sleep?")
    assert found.parts == ["What can I do about the voices", "is there anything to help me sleep?"]
    assert found.outcome == "clear"
    assert set(ids(found)[:2]) == {"A03", "A01"}
    by_part = {c.source_id: c.part for c in found.candidates}
    assert by_part["A03"] == found.parts[0] and by_part["A01"] == found.parts[1]

    listed = identifier.identify("1. clozapine blood tests\n2. going back to my job\n3. eating to keep weight down")
    assert len(listed.parts) == 3
    assert set(ids(listed)[:3]) == {"A02", "A04", "A05"}


@pytest.mark.slow
def test_part_about_something_else_is_left_out(identifier):
    found = identifier.identify("How often are clozapine blood tests, and who won the football last night?")
    assert found.outcome == "clear" and ids(found)[0] == "A02"
    assert all(c.part != found.parts[1] for c in found.candidates)


@pytest.mark.slow
def test_a_question_wrapped_in_a_story_is_found_by_the_sentence_that_asks_it(identifier):
    story = ("We moved house in the summer and my daughter started a new school, it has been a big "
             "change for all of us. What helps with hearing voices?")
    whole = dict(identifier.score([story])[0])
    found = identifier.identify(story)
    assert found.outcome == "clear" and ids(found)[0] == "A03"
    assert found.candidates[0].confidence > whole["A03"] + 0.1

    # A background sentence alone would find its own source clearly; in the message it does not
    # outweigh what is asked.
    background = "His doctor talked about part-time hours at his job."
    assert ids(identifier.identify(background)) == ["A04"]
    found = identifier.identify(f"My husband has been very tired lately and is eating a lot more. {background} "
                                "Is the weight gain from the medicine?")
    assert ids(found) == ["A05"]


@pytest.mark.slow
def test_misspellings_still_find_the_source(identifier):
    assert ids(identifier.identify("clozapin blod tets how ofen"))[0] == "A02"


@pytest.mark.slow
@pytest.mark.parametrize("medicine", ["brexpiprazole", "cariprazine", "lurasidone", "ziprasidone", "asenapine",
                                      "lumateperone", "iloperidone", "sertraline", "lamotrigine", "procyclidine",
                                      "Latuda", "Rexulti", "Vraylar", "Geodon"])
def test_a_medicine_the_knowledge_base_does_not_name_is_never_read_as_one_it_does(default_identifier, medicine):
    """Spelling correction must not turn one medicine into another: a looser reading by sound
    would make brexpiprazole aripiprazole and cariprazine chlorpromazine. A brand is read as its
    own international name (Latuda is lurasidone), and that one as itself."""
    assert default_identifier.correct_spelling(f"side effects of {medicine}") \
        == f"side effects of {international_name(medicine)}"


@pytest.mark.slow
def test_follow_up_leans_on_the_previous_message(identifier):
    assert identifier.identify("what should I do?").outcome == "none"
    found = identifier.identify("what should I do?", context="I keep hearing voices at night")
    assert found.outcome == "clear" and ids(found)[0] == "A03"
    unrelated = identifier.identify("how do I renew my passport online?", context="clozapine blood tests")
    assert unrelated.outcome == "none"


# -- the summary strategy ---------------------------------------------------------------------
def scripted(*replies) -> RoleClient:
    return RoleClient(role="screener", model_name="scripted", llm=ScriptedChatModel(list(replies)))


@pytest.mark.slow
def test_summary_strategy_uses_the_llm_choice(identifier, settings):
    from app.retrieval import SourceIdentifier

    summaries = settings.model_copy(deep=True)
    summaries.retrieval.strategy = "summaries"
    client = scripted(SourceChoice(sources=[ChosenSource(source_id="A04", confidence=0.9),
                                            ChosenSource(source_id="Z99", confidence=0.8)]))
    chosen = SourceIdentifier(identifier.knowledge_base, identifier.index, summaries,
                              chooser=SummaryChooser(client, identifier.knowledge_base))
    found = chosen.identify("Can I ask my boss for shorter hours?")
    assert found.outcome == "clear" and ids(found) == ["A04"]  # the unknown id is dropped
    assert len(found.model_calls) == 1 and found.model_calls[0].ok
    prompt = str(client.llm.prompts[0][0].content)
    assert all(sid in prompt and SOURCES[sid][1] in prompt for sid in SOURCES)


@pytest.mark.slow
def test_both_strategies_blend_and_a_failed_llm_falls_back(identifier, settings):
    from app.retrieval import SourceIdentifier

    both = settings.model_copy(deep=True)
    both.retrieval.strategy = "both"
    client = scripted(SourceChoice(sources=[ChosenSource(source_id="A02", confidence=1.0)]),
                      TimeoutError("model timed out"))
    blended = SourceIdentifier(identifier.knowledge_base, identifier.index, both,
                               chooser=SummaryChooser(client, identifier.knowledge_base))
    found = blended.identify("How often do I need blood tests on clozapine?")
    alone = identifier.identify("How often do I need blood tests on clozapine?")
    assert ids(found)[0] == "A02" and found.outcome == "clear"
    weight = both.retrieval.summaries_weight
    expected = (1 - weight) * alone.candidates[0].confidence + weight * 1.0
    assert found.candidates[0].confidence == pytest.approx(expected, abs=1e-3)

    fallback = blended.identify("How can I sleep better?")
    assert ids(fallback)[0] == "A01"
    assert len(fallback.model_calls) == 1 and not fallback.model_calls[0].ok
