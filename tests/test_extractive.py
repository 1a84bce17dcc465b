"""The grounded extractive generator: only the sources' own sentences, each cited."""

import re

import numpy as np
import pytest

import app.generation.extractive as extractive
from app.core.records import SourceText
from app.core.text import citations_in, split_sentences, strip_citations
from app.generation.extractive import compose_extractive_answer, overview
from app.generation.passages import leans_back, passages, source_sentences

SLEEP = SourceText(id="S22", title="Sleep", text="""# Sleep

## Why sleep changes
Sleeping much less than usual can be an early warning sign of relapse.
Some medicines make people drowsy, especially when they start.

## What helps
Good habits often help:

- going to bed at the same time
- keeping screens out of the bedroom
- less caffeine after lunch

Tell your care team if poor sleep lasts more than a week or two.
""")
SMOKING = SourceText(id="S23", title="Diet, exercise and smoking", text="""# Smoking
Smoking changes the level of some antipsychotic medicines in the blood.
Tell your team before you stop or start smoking, so they can check your medicine.
""")


def test_sentences_drop_headings_and_keep_lists_with_their_lead_in():
    sentences = source_sentences(SLEEP.text)
    assert not any(s.startswith("#") for s in sentences)
    assert ("Good habits often help: going to bed at the same time; keeping screens out of the "
            "bedroom; less caffeine after lunch.") in sentences
    assert all(len(s.split()) >= 3 for s in sentences)


def test_list_items_joined_into_a_sentence_start_in_lower_case_unless_a_name():
    body = "Possible benefits:\n\n- No need to remember tablets.\n- A steady level of medicine.\n" \
           "- CBT alongside it.\n- Clozapine for some.\n- I can plan ahead.\n- CBTp by video.\n- I'm in charge."
    assert source_sentences(body) == ["Possible benefits: no need to remember tablets; a steady level of medicine; "
                                      "CBT alongside it; Clozapine for some; I can plan ahead; CBTp by video; "
                                      "I'm in charge."]


def test_a_list_under_a_heading_that_asks_a_question_starts_its_own_sentence():
    body = "## What helps?\n\n- Routines.\n- Phone reminders.\n"
    assert source_sentences(body) == ["What helps? Routines; phone reminders."]


def test_a_pointer_to_another_source_is_never_quoted():
    body = "It can also affect fertility (see S34). See S27 for more on work and study.\n"
    assert source_sentences(body) == ["It can also affect fertility."]


def test_an_item_s_later_sentences_follow_its_list_and_lean_on_it():
    body = ("Other side effects:\n\n- **Constipation**: very common. Tell your team if your bowels are not "
            "opening as usual.\n- **Drooling**: extra saliva. It is worse at night.\n")
    listed, tail = passages(body)
    assert listed.text == "Other side effects: constipation: very common; drooling: extra saliva."
    # "It is worse at night" says "it" of an item the joined list does not name: left out.
    assert tail.text == "Tell your team if your bowels are not opening as usual." and tail.leans_back


@pytest.mark.slow
@pytest.mark.parametrize(("question", "introduces", "listed"), [
    ("What sort of things can set off a relapse?", "Some things make relapse more likely.",
     "Common triggers are: stopping or missing medicine"),
    ("what goes in a relapse plan?", "A relapse prevention plan is a written plan",
     "It usually includes: your early warning signs"),
])
def test_a_sentence_quoted_brings_the_list_it_introduces(embedder, knowledge_base, question, introduces, listed):
    """Not only the lead: any sentence the next passage's list goes on from says little without
    it ("Some things make relapse more likely." and then nothing of what they are)."""
    source = knowledge_base.get("S07")
    relapse = SourceText(id=source.id, title=source.title, text=source.body)
    answer = compose_extractive_answer([question], [relapse], embedder.encode)
    assert introduces in answer, answer
    assert listed in answer, answer
    assert answer.index(listed) > answer.index(introduces), answer


@pytest.mark.slow
@pytest.mark.parametrize(("question", "instruction"), [
    ("my husband is on clozapine and he has had a high temperature and a sore throat since this morning, is that bad?",
     "Tell your team straight away about signs of infection"),
    ("Mum's on clozapine and hasn't opened her bowels in 4 days, her tummy is swollen and she's been sick once",
     "Tell your team if your bowels are not opening as usual"),
])
def test_a_question_naming_a_medicine_is_answered_on_what_it_asks_of_it(embedder, knowledge_base, question,
                                                                        instruction):
    """Every sentence of the clozapine source names clozapine; read with the name, "a fever on
    clozapine" is nearest "Your clozapine team is there to help". Read also without it, the
    answer quotes what to do about the fever (and a list item's instruction is quotable at all)."""
    source = knowledge_base.get("S11")
    clozapine = SourceText(id=source.id, title=source.title, text=source.body)
    assert instruction in compose_extractive_answer([question], [clozapine], embedder.encode)


@pytest.mark.slow
def test_every_sentence_comes_from_a_source_and_is_cited(embedder):
    embed = embedder.encode
    answer = compose_extractive_answer(
        ["how can I sleep better?", "does smoking change my medicine?"], [SLEEP, SMOKING], embed)
    body, reminder = answer.rsplit("\n\n", 1)
    assert "care team" in reminder
    for sentence in split_sentences(body):
        cited = citations_in(sentence)
        assert len(cited) == 1, sentence
        source = {"S22": SLEEP, "S23": SMOKING}[cited[0]]
        assert strip_citations(sentence).strip() in source_sentences(source.text)
    assert set(re.findall(r"\[(S\d+)\]", answer)) == {"S22", "S23"}  # each part got its source


@pytest.mark.slow
def test_what_was_already_said_in_other_words_is_not_said_again(embedder):
    question = ["how do I know if my sleep problems matter?"]
    plain = compose_extractive_answer(question, [SLEEP], embedder.encode)
    assert "Tell your care team if poor sleep lasts more than a week or two." in plain
    said = ["Please tell your care team if your poor sleep lasts more than a week or two. [S22]"]
    answer = compose_extractive_answer(question, [SLEEP], embedder.encode, already_said=said)
    assert "poor sleep lasts" not in answer, answer
    assert citations_in(answer) == ["S22"]  # something new from the source still answers


@pytest.mark.slow
def test_what_an_earlier_answer_said_is_said_again_when_it_answers_a_new_question(embedder):
    """"Tell me more" passes it over (above); a question of its own may need it again."""
    question = ["how long should bad sleep go on before I say something?"]
    said = ["Tell your care team if poor sleep lasts more than a week or two. [S22]"]
    answer = compose_extractive_answer(question, [SLEEP], embedder.encode, said_before=said)
    assert split_sentences(answer)[0].startswith("Tell your care team if poor sleep lasts"), answer


@pytest.mark.slow
def test_the_sections_an_answer_said_in_other_words_are_its_focus(embedder, knowledge_base):
    """A card rewrites its sources' sentences, so the answer "can it be permanent?" refers back to
    quoted none of them literally; what it said is still what "it" is about: tardive dyskinesia's
    "It can be long-lasting" is not quoted after a card's words on NMS."""
    source = knowledge_base.get("S12")
    side_effects = SourceText(id=source.id, title=source.title, text=source.body)
    card = "NMS, or neuroleptic malignant syndrome, is a rare but serious reaction to antipsychotics. [S12]"
    plain = compose_extractive_answer(["can it be permanent?"], [side_effects], embedder.encode)
    assert "long-lasting" in plain, plain  # what the test guards against, without a focus
    answer = compose_extractive_answer(["can it be permanent?"], [side_effects], embedder.encode,
                                       said_before=[card], focus=card)
    assert "long-lasting" not in answer, answer


FAMILY = SourceText(id="S15", title="Family intervention", text="""# Family intervention
Research shows that family intervention can reduce relapses and time spent in hospital.
Family intervention, sometimes called family therapy, is a talking therapy for a person with psychosis and their family.
Family intervention usually involves about 10 planned sessions, spread over 3 months to a year.
Ask the care coordinator whether family intervention is available.
""")


@pytest.mark.parametrize(("question", "kind"), [
    ("what is family intervention?", "definition"), ("whats a depot", "definition"),
    ("what does akathisia mean", "definition"), ("how long does it go on for", "duration"),
    ("is it forever?", "duration"), ("how often are the blood tests", "frequency"),
    ("why do I need blood tests?", "reason"), ("what is the best medicine?", None),
    ("can I drink alcohol on it?", None),
])
def test_a_question_says_what_kind_of_answer_it_wants(question, kind):
    from app.core.answer_types import wanted

    assert wanted(question) == kind


def test_a_sentence_gives_a_kind_of_answer_by_its_form_not_its_topic():
    from app.core.answer_types import gives

    definition, duration, *_ = source_sentences(FAMILY.text)[1:]
    assert gives("definition", definition) and not gives("definition", source_sentences(FAMILY.text)[0])
    assert gives("duration", duration) and not gives("duration", definition)
    assert gives("frequency", "The tests are weekly at first, then every 4 weeks.")
    assert gives("reason", "People on clozapine have blood tests to check their white blood cells.")


@pytest.mark.slow
@pytest.mark.parametrize(("question", "leads_with"), [
    ("what is family intervention?", "Family intervention, sometimes called family therapy"),
    ("so how long do the sessions go on for", "Family intervention usually involves about 10 planned sessions"),
])
def test_the_answer_leads_with_the_sentence_of_the_kind_asked_for(embedder, knowledge_base, question, leads_with):
    source = knowledge_base.get("S15")
    family = SourceText(id=source.id, title=source.title, text=source.body)
    answer = compose_extractive_answer([question], [family], embedder.encode)
    assert answer.startswith(leads_with), answer


@pytest.mark.slow
def test_the_sentence_that_continues_the_lead_goes_with_it(embedder, knowledge_base):
    """"It causes movements…" says what tardive dyskinesia looks like; it leans on the definition
    before it, so it comes with it rather than being passed over as a dangling sentence."""
    source = knowledge_base.get("S12")
    side_effects = SourceText(id=source.id, title=source.title, text=source.body)
    answer = compose_extractive_answer(["What is tardive dyskinesia? My lips have started moving on their own."],
                                       [side_effects], embedder.encode)
    lead, following = split_sentences(answer)[:2]
    assert lead.startswith("Tardive dyskinesia is") and following.startswith("It causes movements"), answer


@pytest.mark.parametrize(("sentence", "leans"), [
    ("Most are not violent.", True), ("Some of them help with sleep.", True), ("They can help.", True),
    ("Never stop clozapine on your own either.", True), ("Contact your team before taking any more.", True),
    ("Looking after your body helps your mind too.", True), ("Take it at the same time each day.", False),
    ("Instead, you can: show you understand the feeling.", True), ("However, most people recover.", True),
    ("Most people are not violent.", False), ("All antipsychotics can cause it.", False),
    ("If these happen, get urgent medical help.", True), ("When they start, tell your team.", True),
    ("If it is urgent, call the crisis team.", False),
    ("Some use them to relax, to fit in, or to cope.", True), ("Most people find them helpful.", False),
    ("After that, care may pass to the family doctor.", True), ("Because of this, doctors check.", True),
    ("After treatment, most people improve.", False), ("For those who work, it helps.", False),
    ("To catch this early, people have blood tests.", True), ("In this situation, it often works.", True),
    ("Ask them how to start again.", True), ("Telling them can help.", True),
    ("Ask your team how to start again.", False), ("To catch a drop early, people have blood tests.", False),
])
def test_a_sentence_that_stands_for_what_came_before_leans_on_it(sentence, leans):
    assert leans_back(sentence) is leans


@pytest.mark.slow
def test_a_lead_that_leans_back_twice_comes_after_what_it_leans_on(embedder, knowledge_base):
    """"It can be long-lasting" leans on "It causes movements…", which leans on the definition:
    all three read in the source's order, the definition first."""
    source = knowledge_base.get("S12")
    side_effects = SourceText(id=source.id, title=source.title, text=source.body)
    answer = compose_extractive_answer(["can it be long lasting?"], [side_effects], embedder.encode)
    first, second, third = split_sentences(answer)[:3]
    assert first.startswith("Tardive dyskinesia is") and second.startswith("It causes movements"), answer
    assert third.startswith("It can be long-lasting"), answer


@pytest.mark.slow
def test_the_list_the_lead_introduces_goes_with_it(embedder, knowledge_base):
    """"NMS is a rare but serious reaction. Signs of NMS include: …": the signs are what the definition
    goes on to say, though the list's lead-in ("Signs of NMS include") matches the question poorly."""
    source = knowledge_base.get("S12")
    side_effects = SourceText(id=source.id, title=source.title, text=source.body)
    answer = compose_extractive_answer(["what is NMS?"], [side_effects], embedder.encode)
    lead, following = split_sentences(answer)[:2]
    assert lead.startswith("Neuroleptic malignant syndrome (NMS) is"), answer
    assert following.startswith("Signs of NMS include: high temperature (fever); very stiff muscles"), answer


@pytest.mark.slow
@pytest.mark.parametrize(("question", "instruction"), [
    ("what is NMS? it sounds scary", "If these happen, get urgent medical help straight away"),
    ("what is tardive dyskinesia?", "Tell your team if you or your family notice any new movements"),
])
def test_what_to_do_about_what_the_answer_describes_goes_with_it(embedder, knowledge_base, question, instruction):
    """The section's instruction after the lead (what to do about the signs it lists) is part of
    the answer, though the question does not ask for it in words."""
    source = knowledge_base.get("S12")
    side_effects = SourceText(id=source.id, title=source.title, text=source.body)
    answer = compose_extractive_answer([question], [side_effects], embedder.encode)
    assert instruction in answer, answer


@pytest.mark.slow
@pytest.mark.parametrize("question", ["is it caused by bad parenting?", "will he be violent?", "can you recover?"])
def test_a_myth_is_never_quoted_without_its_correction(embedder, knowledge_base, question):
    """"Myth: Bad parenting causes schizophrenia." alone reads as a fact: it comes with its "Fact:"
    paragraph, each sentence cited."""
    source = knowledge_base.get("S28")
    myths = SourceText(id=source.id, title=source.title, text=source.body)
    answer = compose_extractive_answer([question], [myths], embedder.encode)
    sentences = split_sentences(answer)
    quoted = [n for n, s in enumerate(sentences) if s.startswith("Myth:")]
    assert quoted, answer
    for n in quoted:
        assert sentences[n + 1].startswith("Fact:") and citations_in(sentences[n + 1]) == ["S28"], answer


def test_a_question_about_one_item_of_a_list_finds_the_list(embedder):
    """The list's lead-in ("Good habits often help") says little; its items say what it offers."""
    answer = compose_extractive_answer(["should I stop drinking coffee in the afternoon?"], [SLEEP], embedder.encode)
    assert split_sentences(answer)[0].startswith("Good habits often help: going to bed"), answer


@pytest.mark.slow
def test_a_question_whether_one_thing_is_so_hears_that_item_of_a_long_list_only(embedder, knowledge_base):
    """"Does it make you sleepy?" is answered by the drowsiness item of the seven common side
    effects, under its lead-in, not by the whole list."""
    source = knowledge_base.get("S12")
    side_effects = SourceText(id=source.id, title=source.title, text=source.body)
    whole = next(s for s in source_sentences(source.body) if s.startswith("Common side effects:"))
    answer = compose_extractive_answer(["does it make you sleepy?"], [side_effects], embedder.encode)
    quoted = next(strip_citations(s) for s in split_sentences(answer) if s.startswith("Common side effects:"))
    assert quoted.startswith("Common side effects: drowsiness: feeling sleepy"), answer
    assert "weight gain" not in quoted and len(quoted) < len(whole), answer


@pytest.mark.slow
@pytest.mark.parametrize("question", ["what are the common side effects?", "are there any side effects?"])
def test_a_question_for_a_set_of_things_hears_the_whole_list(embedder, knowledge_base, question):
    source = knowledge_base.get("S12")
    side_effects = SourceText(id=source.id, title=source.title, text=source.body)
    whole = next(s for s in source_sentences(source.body) if s.startswith("Common side effects:"))
    answer = compose_extractive_answer([question], [side_effects], embedder.encode)
    assert whole in answer, answer


@pytest.mark.parametrize(("question", "yes_or_no"), [
    ("does it make you sleepy?", True), ("she's put on loads of weight. is that normal??", True),
    ("what are the side effects?", False), ("is there any support for carers?", False),
    ("can I appeal? how do I do it", False), ("tips for sleeping better?", False),
])
def test_a_question_says_whether_it_asks_if_one_thing_is_so(question, yes_or_no):
    from app.core.answer_types import asks_yes_or_no

    assert asks_yes_or_no(question) is yes_or_no


@pytest.mark.parametrize(("message", "asks"), [
    ("my brother started clozapine 2 weeks ago", False), ("im on aripiprazole", False),
    ("my son got diagnosed last month", False),
    ("stress makes my symptoms worse, how do i calm down", True),  # a later clause asks
    ("i hear voices and i dont know what to do", True), ("tell me about clozapine", True),
    ("clozapine side effects", True),  # about nobody: a search
    ("my dad has it and he wont take his meds", True),  # a problem told asks for help with it
    ("my nurse mentioned a 'relapse signature' what does that mean", True),  # run on, unpunctuated
    ("my mum was just diagnosed with schizophrenia, im 15", False),
    # Questions typed without a question mark, after what they are about.
    ("is there any hope for my daughter", True), ("my son has hardly slept for 3 nights is that a warning sign", True),
    ("my daughter missed her depot injection what happens now", True), ("stopin my pills is that ok", True),
    # …and statements whose words could open one.
    ("im going to do it tonight", False), ("my brother is there for me", False),
    ("i wanna try a month off to see what happens", False), ("my son thinks this is it for him", False),
])
def test_a_message_says_whether_it_asks_anything(message, asks):
    from app.core.answer_types import asks_anything

    assert asks_anything(message) is asks


@pytest.mark.parametrize(("message", "tells"), [
    ("my sister has the tablets now. what does quetiapine do to your weight?", "my sister has the tablets now."),
    ("Sorry, being dramatic. How long does a depot last", "Sorry, being dramatic."),
    ("im home and safe now! thanks. is clozapine a strong one?", "im home and safe now! thanks."),
    ("how many would it take?", "how many would it take?"),  # only asks: all of it
    ("forget it", "forget it"),
])
def test_what_a_message_tells_is_the_message_without_its_questions(message, tells):
    from app.core.answer_types import what_it_tells

    assert what_it_tells(message) == tells


def test_the_overview_of_a_source_is_its_opening_paragraph_cited(knowledge_base):
    source = knowledge_base.get("S11")
    text = overview(SourceText(id=source.id, title=source.title, text=source.body))
    assert text.startswith("Clozapine is an antipsychotic medicine") and text.count("[S11]") == 3, text
    assert "##" not in text and "blood test" not in text


def test_rare_question_words_weigh_more_than_common_ones():
    """A sentence naming the medicine asked about beats one that shares only everyday words."""
    pills = SourceText(id="S90", title="Medicines", text=(
        "Your medicine and your tablets should be reviewed by your team at every visit. "
        "Keep your medicine in a cool, dry place. "
        "A pill box helps you remember your tablets. "
        "Ask the pharmacist if your medicine looks different. "
        "Some tablets can be crushed, others cannot. "
        "Take your medicine at the same time each day. "
        "Swallow tablets with a glass of water. "
        "Never share your medicine with anyone. "
        "Aripiprazole is an antipsychotic that is less likely to cause weight gain."))

    def same_vector(texts: list[str]) -> np.ndarray:  # no help from meaning: words alone decide
        return np.ones((len(texts), 4)) / 2.0

    answer = compose_extractive_answer(["tell me about aripiprazole, the medicine in my tablets"], [pills],
                                       same_vector, max_sentences=1)
    assert answer.startswith("Aripiprazole is an antipsychotic"), answer




@pytest.mark.slow
def test_a_sentence_the_knowledge_base_links_to_a_question_like_the_one_asked_is_quoted(embedder, knowledge_base):
    """Sentences on how long people take medicine share more words with "why do I still have to
    take it?"; the source's own link from a question like it to its answer finds the one that
    answers why."""
    question = ["if I feel fine now, why do I still have to take my antipsychotic?"]
    regular = SourceText.of(knowledge_base.get("S13"))
    linked = "Feeling well is often a sign that the medicine is working, not a sign that you no longer need it."
    assert linked in regular.answers["Why keep taking antipsychotics when you feel well?"]
    unlinked = regular.model_copy(update={"answers": {}})
    assert linked not in compose_extractive_answer(question, [unlinked], embedder.encode)
    answer = compose_extractive_answer(question, [regular], embedder.encode)
    assert linked in answer, answer
    assert citations_in(answer) == ["S13"]


@pytest.mark.slow
def test_a_sentence_naming_the_medicine_asked_about_is_about_it(embedder, knowledge_base, monkeypatch):
    """Read without the medicine's name (as MiniLM would otherwise weigh it over what is asked),
    "is quetiapine an antipsychotic? …to help her sleep" is nearest sleep; the list that names
    quetiapine among the antipsychotics is what answers it."""
    question = ["is quetiapine an antipsychotic? my partner was told by her doctor it's to help her sleep and now im confused"]
    medicines = SourceText.of(knowledge_base.get("S09"))
    answer = compose_extractive_answer(question, [medicines], embedder.encode)
    assert re.search(r"second-generation \(newer, or \"atypical\"\) antipsychotics, such as [^.]*quetiapine", answer), answer
    monkeypatch.setattr(extractive, "NAMED_MEDICINE_BONUS", 0.0)
    assert "quetiapine" not in compose_extractive_answer(question, [medicines], embedder.encode)


@pytest.mark.slow
def test_a_sentence_on_the_class_of_the_medicine_meant_is_about_it(embedder, knowledge_base):
    """"is it safe to drink on it?" after clozapine: what the drink source says of antipsychotics
    leads, as it is true of clozapine; asked of nothing in particular, it need not."""
    question, drugs = ["is it safe to drink on it?"], SourceText.of(knowledge_base.get("S20"))
    lead = "Drinking while taking antipsychotic medicine"
    meant = compose_extractive_answer(question, [drugs], embedder.encode, meant_medicines=frozenset({"clozapine"}))
    assert meant.startswith(lead), meant
    assert not compose_extractive_answer(question, [drugs], embedder.encode).startswith(lead)


@pytest.mark.slow
def test_what_leans_on_the_lead_follows_it_though_an_earlier_sentence_is_quoted_too(embedder, knowledge_base):
    """The lead comes first and the rest of its source in its own order: a sentence before the
    lead never comes between it and the sentence leaning on it, whose "It" would then read as
    cannabis."""
    drugs = SourceText.of(knowledge_base.get("S20"))
    answer = compose_extractive_answer(["is cbd oil ok?? my brother wants to use it"], [drugs], embedder.encode)
    assert answer.startswith("CBD is another chemical in cannabis. [S20] It does not make people high"), answer
