"""Vetted answer cards: validated on load, judged by the filter in `kb check`, matched to questions."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path

import pytest

from app.core.config import DEFAULT_KNOWLEDGE_BASE
from app.core.errors import KnowledgeBaseError
from app.core.profile import load_profile
from app.kb import load_knowledge_base
from app.kb.cards import safety_facts
from screening.screen_model import training_files

CONDITION_WORDS = load_profile(DEFAULT_KNOWLEDGE_BASE).condition_words

ROOT = Path(__file__).resolve().parents[1]
CARD = """---
id: Z01
title: Clozapine blood tests
questions:
  - "Why are there blood tests on clozapine?"
kind: answer
---
{body}
"""


def kb_with_card(tmp_path: Path, body: str) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir(parents=True)
    shutil.copy(ROOT / "knowledge_base" / "S11-clozapine.md", kb)
    (kb / "answers").mkdir()
    (kb / "answers" / "Z01-blood-tests.md").write_text(CARD.format(body=body), encoding="utf-8")
    return kb


def test_the_shipped_cards_load_and_cite_only_trusted_sources(knowledge_base):
    assert len(knowledge_base.cards) >= 30
    assert {c.kind for c in knowledge_base.cards} == {"answer", "boundary", "urgent"}
    for card in knowledge_base.cards:
        assert card.sources and all(s in knowledge_base for s in card.sources), card.id
        assert not card.uncited_sentences(), card.id


def test_cards_name_kinds_the_input_screen_reads(knowledge_base):
    """A card's `requests` must be categories the screen is trained on for its kind of card
    (a boundary card: requests about one's own case; an urgent card: kinds of crisis), or the
    screen's reading could never choose it."""
    trained: dict[str, set[str]] = {}
    for path in training_files():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                trained.setdefault(row.get("route"), set()).add(row.get("category"))
    route_of = {"boundary": "boundary", "urgent": "crisis"}
    listed = [(card.id, card.kind, request) for card in knowledge_base.cards for request in card.requests]
    assert {kind for _, kind, _ in listed} == set(route_of)
    assert [item for item in listed if item[2] not in trained[route_of[item[1]]]] == []


@pytest.mark.slow
def test_a_boundary_card_is_matched_by_requests_about_someone_s_own_case(knowledge_base, embedding_resources):
    """A general phrasing ("Is schizophrenia genetic?") on a boundary card gives a general
    question the reply "I can't work out the risk for you": such phrasings belong on an answer
    card. Each boundary phrasing names whose case it is (I, my, her son, …) or the screen reads it
    as a request about one's own case ("voices r coming back is it a relapse")."""
    from screening.crisis import assess

    own = re.compile(r"\b(i|i'm|im|i've|me|my|we|our|us|he|she|him|her|his|they|them|their|you|your)\b",
                     re.IGNORECASE)
    general = [(card.id, q) for card in knowledge_base.cards if card.kind == "boundary" for q in card.questions
               if not own.search(q) and not assess(q, embedding_resources).personal_advice]
    assert general == []


@pytest.mark.parametrize(("body", "problem"), [
    ("Clozapine needs blood tests. [S99]", "cites S99, not a trusted source"),
    ("Clozapine needs regular blood tests. [S11] It is the best medicine for everyone.",
     "a sentence has no citation"),
])
def test_a_broken_card_stops_loading_naming_file_and_problem(tmp_path, body, problem):
    with pytest.raises(KnowledgeBaseError, match=rf"Z01-blood-tests.md: {problem}"):
        load_knowledge_base(kb_with_card(tmp_path, body))


BOUNDARY_CARD = """---
id: {id}
title: Clozapine doses
questions:
  - "Can I change my clozapine dose?"
kind: boundary
requests: [{kind}]
safety_fact: "{fact}"
---
I can't say what dose to take. Clozapine needs regular blood tests. [S11] Ask your clozapine team about your dose. [S11]
"""


@pytest.mark.parametrize(("kind", "fact", "problem"), [
    ("dose", "Clozapine needs blood tests. [S11]", "not one of the card's cited sentences"),
    ("dose", "I can't say what dose to take.", "not one of the card's cited sentences"),
])
def test_a_safety_fact_must_be_one_of_the_card_s_own_cited_sentences(tmp_path, kind, fact, problem):
    kb = kb_with_card(tmp_path, "Clozapine needs regular blood tests. [S11]")
    (kb / "answers" / "Z02-doses.md").write_text(BOUNDARY_CARD.format(id="Z02", kind=kind, fact=fact),
                                                 encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match=rf"Z02-doses.md: field 'safety_fact': {problem}"):
        load_knowledge_base(kb)


def test_one_card_declares_the_safety_fact_of_a_kind_of_request(tmp_path):
    kb = kb_with_card(tmp_path, "Clozapine needs regular blood tests. [S11]")
    fact = "Ask your clozapine team about your dose. [S11]"
    for card_id in ("Z02", "Z03"):
        (kb / "answers" / f"{card_id}-doses.md").write_text(
            BOUNDARY_CARD.format(id=card_id, kind="dose", fact=fact), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"Z03-doses.md: field 'safety_fact': Z02 already declares .* 'dose'"):
        load_knowledge_base(kb)


def test_a_card_s_reasons_are_sources_of_this_knowledge_base(tmp_path):
    kb = kb_with_card(tmp_path, "Clozapine needs regular blood tests. [S11]")
    card = BOUNDARY_CARD.format(id="Z02", kind="dose", fact="Ask your clozapine team about your dose. [S11]")
    (kb / "answers" / "Z02-doses.md").write_text(card.replace("kind: boundary\n", "kind: boundary\nreasons: [S99]\n"),
                                                 encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"Z02-doses.md: field 'reasons': S99, not a trusted source here"):
        load_knowledge_base(kb)


def test_the_shipped_safety_facts_are_declared_for_the_medicine_decisions(knowledge_base):
    declared = safety_facts(knowledge_base.cards)
    assert {"dose", "missed_dose", "stop_or_reduce", "switch", "side_effect_decision",
            "medicine_for_someone"} <= set(declared), declared


@pytest.mark.slow
def test_kb_check_runs_every_card_through_the_filter_and_fails_on_a_rejected_one(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from app.cli.main import cli

    monkeypatch.setenv("CAFBOT_DATA_DIR", str(tmp_path / "data"))
    good = ("In a small number of people, clozapine lowers the number of white blood cells, which "
            "fight infection, so people on clozapine have regular blood tests. [S11]")
    passed = CliRunner().invoke(cli, ["kb", "check", str(kb_with_card(tmp_path / "a", good))])
    assert passed.exit_code == 0, passed.output
    assert "1 answer cards" in passed.output
    unsafe = "You can stop clozapine whenever you feel well and double the dose if you forget. [S11]"
    failed = CliRunner().invoke(cli, ["kb", "check", str(kb_with_card(tmp_path / "b", unsafe))])
    assert failed.exit_code == 1
    assert "card rejected" in failed.output and "Z01-blood-tests.md" in failed.output


@pytest.mark.slow
def test_kb_check_names_a_suggested_question_that_does_not_find_its_own_source(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from app.cli.main import cli

    monkeypatch.setenv("CAFBOT_DATA_DIR", str(tmp_path / "data"))
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in ("S01-what-is-schizophrenia.md", "S02-positive-symptoms.md", "S03-negative-symptoms.md",
                 "S05-causes.md", "S11-clozapine.md"):
        shutil.copy(next((ROOT / "knowledge_base").glob(name.split("-")[0] + "-*.md")), kb / name)
    clozapine = kb / "S11-clozapine.md"
    text = clozapine.read_text(encoding="utf-8")
    clozapine.write_text(text.replace("questions:\n", 'questions:\n  - "Does schizophrenia mean a split personality?"\n', 1),
                         encoding="utf-8")
    result = CliRunner().invoke(cli, ["kb", "check", str(kb)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    warned = [line for line in result.output.splitlines() if line.startswith("question ")]
    assert len(warned) == 1 and "S11: 'Does schizophrenia mean a split personality?' finds" in warned[0]
    # No cards and no example messages: kb check says so, kind by kind.
    output = " ".join(result.output.split())
    assert "No example messages (examples/): retrieval alone finds every source" in output
    assert "kinds of request have no answer card" in output and "missed_dose" in output
    assert "dose │ none" in output


@pytest.mark.slow
def test_the_card_for_the_kind_of_request_wins_over_a_longer_phrasing_it_only_partly_says(embedder, knowledge_base):
    """A bare request to stop is close to the side-effects card's "should I stop my meds because
    of the side effects?", but says less than it: the card for stopping answers it. A question
    that says all of a card's own phrasing gets that card, whatever the kind read."""
    from app.core.config_sections import Retrieval
    from app.retrieval.cards import CardMatcher

    matcher = CardMatcher(knowledge_base.cards, embedder.encode, CONDITION_WORDS)
    settings = Retrieval()
    bare = matcher.match("should i stop my meds?", settings, own_case=True, requests=["stop_or_reduce"])
    assert bare is not None and "stop_or_reduce" in bare.card.requests, bare
    phrasing = next(q for card in knowledge_base.cards if "side_effect_decision" in card.requests
                    for q in card.questions if "side effect" in q.lower())
    said_in_full = matcher.match(phrasing, settings, own_case=True, requests=["stop_or_reduce"])
    assert said_in_full is not None and "side_effect_decision" in said_in_full.card.requests, said_in_full



@pytest.mark.slow
def test_a_request_about_no_medicine_gets_the_card_on_its_topic_not_its_kind(embedder, knowledge_base):
    """"Should we stop him smoking weed?" reads as a request to stop, but speaks of no medicine:
    the boundary card on cannabis answers it, not the one on stopping medicine; "should we stop
    his meds?" still gets the card for its kind."""
    from app.core.config_sections import Retrieval
    from app.retrieval.cards import CardMatcher

    matcher = CardMatcher(knowledge_base.cards, embedder.encode, CONDITION_WORDS)
    settings = Retrieval()
    cannabis = {s.id for s in knowledge_base if "cannabis" in [k.lower() for k in s.keywords]}
    weed = matcher.match("should we stop him smoking weed?", settings, own_case=True, requests=["stop_or_reduce"],
                         topics=cannabis)
    assert weed is not None and weed.card.kind == "boundary" and set(weed.card.sources) & cannabis, weed
    meds = matcher.match("should we stop his meds?", settings, own_case=True, requests=["stop_or_reduce"],
                         topics=cannabis)
    assert meds is not None and "stop_or_reduce" in meds.card.requests, meds


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "message", "vouching"), [
    # drink and cannabis; other medicines and remedies: which one is "St John's wort"?
    ("combine", "can she take st john's wort alongside her aripiprazole", "found"),
    # getting the illness; relapsing: after an answer on heredity, the first
    ("risk_rating", "does that mean she's going to get it?", "continued"),
])
def test_sources_that_vouch_choose_among_the_cards_for_a_kind(embedder, knowledge_base, kind, message, vouching):
    """Several boundary cards answer a kind of request and the phrasings cannot tell which one a
    message asks: the sources retrieval found for it (`found`), or that the answer a follow-up
    continues drew on (`continued`), can."""
    from app.core.config_sections import Retrieval
    from app.retrieval.cards import CardMatcher

    matcher = CardMatcher(knowledge_base.cards, embedder.encode, CONDITION_WORDS)
    settings = Retrieval()
    serving = [card for card in knowledge_base.cards if kind in card.requests]
    assert len(serving) >= 2 and len({frozenset(card.sources) for card in serving}) == len(serving)
    for card in serving:
        found = matcher.match(message, settings, own_case=True, requests=[kind], **{vouching: card.sources})
        assert found is not None and found.card is card, (card.id, found)


@pytest.mark.slow
def test_the_topic_a_request_names_vouches_before_the_answer_it_continues(embedder, knowledge_base):
    """Of the cards for a kind that the phrasings cannot tell apart, the one on the topic the
    request names in its own words, and retrieval found, answers, whichever the answer it
    continues drew on: "is it safe with alcohol?" after an answer on olanzapine, from the
    medicines source that vouches for the card on other medicines, names drink."""
    from app.core.config_sections import Retrieval
    from app.retrieval.cards import CardMatcher

    matcher = CardMatcher(knowledge_base.cards, embedder.encode, CONDITION_WORDS)
    settings = Retrieval()
    serving = [card for card in knowledge_base.cards if "combine" in card.requests]
    message = "can she take st john's wort alongside her aripiprazole"  # near both (see above)
    for named, continued in itertools.permutations(serving, 2):
        found = matcher.match(message, settings, own_case=True, requests=["combine"],
                              topics=named.sources, found=named.sources, continued=continued.sources)
        assert found is not None and found.card is named, (named.id, continued.id, found)
        # Named but not found by retrieval ("tablet" names the medicines source): no vote.
        found = matcher.match(message, settings, own_case=True, requests=["combine"],
                              topics=named.sources, continued=continued.sources)
        assert found is not None and found.card is continued, (named.id, continued.id, found)


@pytest.mark.slow
def test_a_general_card_on_a_named_topic_can_outvote_the_card_for_the_kind(embedder, knowledge_base):
    """A general card much closer than the kind's card, on a topic the message names by its
    keywords and the kind's card's topic not, answers (the smoking card for quitting smoking on
    clozapine); otherwise the kind's card stays."""
    from app.core.config_sections import Retrieval
    from app.retrieval.cards import CardMatcher

    matcher = CardMatcher(knowledge_base.cards, embedder.encode, CONDITION_WORDS)
    settings = Retrieval()
    smoking = "I'm on clozapine. my mate says I should quit smoking and switch to vaping, is that a good idea?"
    alone = matcher.match(smoking, settings, own_case=True, requests=["combine"])
    assert alone is not None and alone.card.kind == "boundary", alone
    general = matcher._closest(matcher._similarities(smoking), settings)
    assert general is not None and general.card.kind == "answer"
    agreed = matcher.match(smoking, settings, own_case=True, requests=["combine"], topics=general.card.sources[:1])
    assert agreed is not None and agreed.card is general.card and agreed.confident, agreed
    both = matcher.match(smoking, settings, own_case=True, requests=["combine"],
                         topics=[*general.card.sources[:1], *alone.card.sources])
    assert both is not None and both.card is alone.card, both  # it names the kind's card's topic too


BIRTH = ("The weeks after having a baby are a time of higher risk of relapse. [S34] "
         "It helps to make a written plan before the birth. [S34] "
         "Many antipsychotics pass into breast milk in small amounts, and with a few, such as clozapine, "
         "breastfeeding is usually not advised. [S34] "
         "It can help to ask about breastfeeding before the birth. [S34]")


def test_a_card_that_serves_several_questions_leads_with_the_one_asked(embedder):
    from app.core.text import split_sentences
    from app.generation.cards import led_by_answer
    answer = led_by_answer(BIRTH, "can you breastfeed on antipsychotics?", embedder.encode)
    # The sentence that leans on it ("It can help to ask about breastfeeding…") goes with it.
    assert answer.startswith("Many antipsychotics pass into breast milk in small amounts, and with a few, such as "
                             "clozapine, breastfeeding is usually not advised. [S34] It can help to ask about "
                             "breastfeeding before the birth. [S34] The weeks after"), answer
    assert sorted(split_sentences(answer)) == sorted(split_sentences(BIRTH))  # the same sentences
    assert led_by_answer(BIRTH, "is relapse more likely after the birth?", embedder.encode) == BIRTH


def test_a_sentence_that_leans_on_the_one_before_never_leads_a_card(embedder):
    from app.generation.cards import led_by_answer
    assert led_by_answer(BIRTH, "should I ask about breastfeeding before the birth?", embedder.encode) == BIRTH


CLOZAPINE = ("Clozapine is an antipsychotic used when two others have not helped enough. [S11] "
             "In a small number of people, clozapine lowers the white blood cells, so people on clozapine have "
             "regular blood tests. [S11] "
             "The tests are most frequent in the first months. [S11] "
             "Constipation is very common on clozapine. [S11]")


def test_a_sentence_that_names_again_what_the_one_before_named_leads_a_card_after_it(embedder):
    """"The tests are most frequent…" first would read as said of tests nobody has named."""
    from app.core.text import split_sentences
    from app.generation.cards import led_by_answer
    answer = split_sentences(led_by_answer(CLOZAPINE, "how often are the tests?", embedder.encode))
    assert answer[0].startswith("In a small number of people") and answer[1].startswith("The tests"), answer


@pytest.mark.parametrize(("message", "told", "asked"), [
    ("my son has schizophrenia and won't take his meds", "my son has schizophrenia", "won't take his meds"),
    ("my daughter was diagnosed last year and she skips her tablets, what can we do",
     "my daughter was diagnosed last year", "she skips her tablets what can we do"),
    # Nothing asked of its own, or words that lean on the situation: no situation set aside.
    ("my son has just been diagnosed with schizophrenia, what now?", "", None),
    ("my mum was diagnosed years ago, is it genetic?", "", None),
    ("i have paranoid schizophrenia", "", None),
    ("i keep hearing my name when no ones there. do i have schizophrenia", "", None),
])
def test_a_card_is_sought_for_what_is_asked_without_the_situation_told(message, told, asked):
    from app.retrieval.cards import situation_told

    assert situation_told(message, CONDITION_WORDS) == (told, asked or message)


@pytest.mark.slow
def test_a_card_asked_what_a_medicine_is_answers_neither_how_long_nor_a_request_by_the_name_alone(embedder, knowledge_base):
    """A question that says little beyond a medicine's name is near "what is <that medicine>?"
    for the name alone: "how long before risperidone kicks in?" wants a length of time, and a
    request to switch to aripiprazole gets the card for switching, not the one on what it is,
    which retrieval's sources agree with only on the topic."""
    from app.core.config_sections import Retrieval
    from app.retrieval.cards import CardMatcher

    matcher = CardMatcher(knowledge_base.cards, embedder.encode, CONDITION_WORDS)
    settings = Retrieval()
    by_name = matcher.match("what is risperidone", settings)
    assert by_name is not None and by_name.confident and by_name.card.sources == ["S09"], by_name
    timing = matcher.match("how long before risperidone kicks in?", settings, found=["S09"])
    assert timing is None or timing.card is not by_name.card, timing
    switch = matcher.match("would i be better off on aripiprazole?", settings, own_case=True,
                           requests=["switch"], found=["S09"], topics=["S09"])
    assert switch is not None and switch.card.kind == "boundary" and "switch" in switch.card.requests, switch


@pytest.mark.slow
def test_a_card_asked_what_a_medicine_is_answers_what_is_asked_of_it_not_its_name(embedder, knowledge_base):
    """"is dribbling at night a known thing with clozapine?" names clozapine and asks about a side
    effect in words no card phrasing uses: read as said it is near "what is clozapine?" for the
    name alone. It gets no card on what clozapine is; a question about clozapine as a whole, in
    words of its own, still does."""
    from app.core.config_sections import Retrieval
    from app.retrieval.cards import CardMatcher

    matcher = CardMatcher(knowledge_base.cards, embedder.encode, CONDITION_WORDS)
    settings = Retrieval()
    defining = matcher.match("what is clozapine?", settings)
    assert defining is not None and defining.confident, defining
    for whole in ("tell me about clozapine", "could you explain what clozapine is?"):
        found = matcher.match(whole, settings, found=["S11"])
        assert found is not None and found.confident and found.card is defining.card, (whole, found)
    aspect = matcher.match("is dribbling at night a known thing with clozapine?", settings, found=["S11"])
    assert aspect is None or aspect.card is not defining.card, aspect
