"""The input screen: where a user's message goes, decided the same way for a user turn and for
`cafbot judges eval` (one path, so the published figures are the product's).

Order matters: clean the message; the crisis screen (every language, before anything else, with
a screener LLM's second look where tier 0 was unsure); then the "English only" notice; then a
follow-up to the conversation so far ("tell me more", "why?"), small talk ("hi", "thanks") or a
question for the knowledge base; for a question, where the learned layer was unsure, the screener
LLM decides whether it asks about a particular person's own case.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.core.answer_types import asks_anything
from app.core.config import Settings
from app.core.models import Deadline, RoleClient
from app.core.records import InputScreen, ModelCall
from app.core.text import content_stems, stem
from app.input import clean_message
from judges.crisis_screen import needs_second_look, second_look
from judges.local.resources import Resources
from judges.request_screen import needs_request_look, request_look
from screening.context_model import LOOKBACK
from screening.crisis import Assessment, as_question, assess

SMALL_TALK_FROM = 0.5  # the learned layer's small-talk probability from which a message is small talk
FOLLOW_UP_MAX_WORDS = 8
SITUATION_LOOKBACK = 3  # how many of the user's earlier messages a stated situation is looked for in
# Words that carry no topic of their own in a follow-up ("tell me more about that, please").
_FOLLOW_UP_WORDS = frozenset(
    ["tell", "more", "say", "explain", "go", "on", "continue", "else", "detail", "details", "example", "examples", "why", "how", "come", "what", "about", "and", "but", "so", "then", "that", "this", "it", "its", "they", "them", "those", "these", "one", "other", "please", "again", "bit", "elaborate", "mean", "meaning", "such", "like"])
_FOLLOW_UP_STEMS = frozenset(stem(w) for w in _FOLLOW_UP_WORDS)
_FOLLOW_UP_START = re.compile(
    r"^\s*(and|but|so|also|what about|how about|why|how come|tell me more|more|go on|such as|"
    r"like what|what else|anything else|for example|e\.?g\.?|is that|are they|does it|do they|"
    r"can it|can they|what if|the other|that one|which one)\b", re.IGNORECASE)


@dataclass
class ScreenResult:
    screen: InputScreen
    model_calls: list[ModelCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def was_crisis(previous: InputScreen | None) -> bool:
    """The previous message was itself a crisis (not only the turn after one)."""
    return previous is not None and previous.route == "crisis" and previous.crisis_layer != "conversation"


def screen_message(raw: str, *, settings: Settings, resources: Resources, screener: RoleClient | None,
                   llm_allowed: bool, has_conversation: bool, previous: InputScreen | None = None,
                   earlier: Sequence[str] = (), deadline: Deadline | None = None) -> ScreenResult:
    """Route one message. `llm_allowed`: the filter is on for this turn (the screener may look);
    `has_conversation`: an earlier answer exists that a follow-up can lean on; `previous`: the
    screen of the user's message before; `earlier`: the user's messages before this one, oldest
    first. A message is read alone and with those (`screening.context_model`): danger may be
    visible only with what came before. After a crisis this one stays on the crisis route
    (someone in danger a moment ago who now writes "forget it", "don't give me numbers" or "it was
    a joke" gets the contacts again, not small talk), unless it asks something of its own that
    neither it alone nor read with the crisis before it carries the danger: "should I stop my
    clozapine?" is answered (and ends with the contacts, as every answer soon after a crisis
    does), and a boundary request hears its boundary reply."""
    after_crisis = was_crisis(previous)
    cleaned = clean_message(raw, settings.input)
    screen = InputScreen(text=cleaned.text, notices=list(cleaned.notices))
    result = ScreenResult(screen)
    if cleaned.empty or cleaned.refused:
        screen.route, screen.notices = "notice", []
        screen.reply = "" if cleaned.empty else " ".join(cleaned.notices)
        return result
    found = assess(cleaned.text, resources)
    crisis = found.crisis
    screen.crisis_score, screen.crisis_layer, screen.crisis_evidence = found.score, found.layer, found.evidence
    screen.crisis_kind, screen.language = found.crisis_kind, found.language
    screen.crisis_unsure = found.unsure_crisis
    # Read with the user's last few messages: danger only visible with what came before, and,
    # after a crisis, whether this message still carries it. A crisis only the learned layer saw,
    # unsure, is read so too: "how often would someone need to have it done?" after a depot was
    # mentioned is a question about the depot.
    second_reading = screen.crisis_unsure and not after_crisis and _says_something(earlier, resources)
    context = None if (crisis and not second_reading) or resources.context_model is None \
        else resources.context_model.read(list(earlier), cleaned.text, crisis_before_confirmed=(
            after_crisis and previous is not None and not previous.crisis_unsure))
    if second_reading and context is not None and not context.is_crisis:
        crisis, screen.crisis_cleared = False, True
        screen.crisis_layer = f"model (cleared by the conversation: {context.probability:.2f} read with it)"
        found = as_question(cleaned.text, resources)
    by_context = _read_request(screen, found, cleaned.text, earlier, resources)
    in_context = context is not None and context.is_crisis
    if after_crisis and not crisis and not in_context and found.small_talk < SMALL_TALK_FROM \
            and asks_anything(cleaned.text):
        after_crisis = False  # asks something of its own, without the danger: answered, contacts kept
    mode = settings.caf.llm_crisis_screen
    # After a crisis the route is crisis whatever the screener says: no call to make.
    if screener is not None and llm_allowed and not after_crisis and needs_second_look(found, mode):
        llm_crisis, reason, call = second_look(screener, cleaned.text, deadline)
        if call is not None:
            result.model_calls.append(call)
        if call is None or not call.ok:
            result.errors.append(reason)  # tier 0's answer stands
        elif llm_crisis and not crisis:
            crisis = True
            screen.crisis_layer, screen.crisis_evidence = "llm", [reason or "the crisis screener's judgement"]
        elif llm_crisis:
            screen.crisis_unsure = False  # the screener agrees: the next message is read after a sure one
        elif not llm_crisis and crisis:  # only an unsure learned flag reaches here
            crisis, screen.crisis_cleared = False, True
            screen.crisis_layer = f"model (cleared by the screener: {reason})"
            found = as_question(cleaned.text, resources)
            by_context = _read_request(screen, found, cleaned.text, earlier, resources)
    if not crisis and in_context and context is not None and not after_crisis:  # after one: "conversation" below
        # Danger only visible with what came before ("my voices are back", then "they want me to
        # take all of them and I think they're right"): the screener's look at the message alone
        # cannot clear it.
        crisis, screen.crisis_cleared = True, False
        screen.crisis_layer, screen.crisis_evidence = "context", list(context.evidence)
        screen.crisis_score, screen.crisis_kind = context.probability, context.crisis_kind
    if after_crisis and not crisis:
        crisis = True
        screen.crisis_layer, screen.crisis_evidence = "conversation", ["the previous message was a crisis"]
    if crisis:
        screen.route = "crisis"
    elif not found.english:
        screen.route = "notice"  # the caller fills in the "English only" reply
    elif has_conversation and is_follow_up(cleaned.text):
        screen.follow_up = True
    elif found.small_talk >= SMALL_TALK_FROM:
        screen.route = "small_talk"
    elif screener is not None and llm_allowed and not by_context \
            and needs_request_look(found, settings.caf.llm_request_screen):
        # The screener reads the message alone: a request made over two messages stays one.
        own_case, reason, call = request_look(screener, cleaned.text, deadline)
        if call is not None:
            result.model_calls.append(call)
        if own_case is None:
            result.errors.append(reason)  # tier 0's reading stands
        else:
            screen.personal_advice = own_case
    return result


def _says_something(earlier: Sequence[str], resources: Resources) -> bool:
    """Whether the messages the context model reads a message with hold more than small talk: only
    they can clear an unsure crisis (after "hello" alone, "is there a medicine that would let me
    fall asleep forever" is read as it stands)."""
    return any(assess(said, resources).small_talk < SMALL_TALK_FROM for said in earlier[-LOOKBACK:] if said.strip())


def _read_request(screen: InputScreen, found: Assessment, text: str, earlier: Sequence[str],
                  resources: Resources) -> bool:
    """What the message asks as the screen reads it: small talk, whose case, how urgent. True when
    it is a request only read with the messages before it."""
    screen.small_talk_score, screen.personal_advice = found.small_talk, found.personal_advice
    screen.small_talk_kind, screen.boundary_kinds = found.small_talk_kind, found.boundary_kinds
    screen.urgent = found.urgent
    by_context = _context_then_request(found, text, earlier, resources) or _continues_a_request(found, earlier, resources)
    if by_context:
        screen.personal_advice = True  # "I'm on clozapine" / "is it ok to switch to vaping?"
    return by_context


def _context_then_request(found: Assessment, text: str, earlier: Sequence[str], resources: Resources) -> bool:
    """A question that, read after the latest statement the user made shortly before it, asks
    about their own case: one request said in two messages ("my boyfriend has started muttering to
    himself…", then "does that sound like he has it?"), or with a question between them ("I've
    just been put on olanzapine", "does it make you sleepy?", then "is it safe with alcohol?").
    Only after a statement that asked nothing and was not itself read as a request, a crisis or
    small talk, so the question after "my team want me to try a depot" ("does it hurt?") stays a
    question."""
    if found.crisis or found.personal_advice or found.small_talk >= SMALL_TALK_FROM:
        return False
    statement = next((said for said in reversed(earlier[-SITUATION_LOOKBACK:]) if not asks_anything(said)), None)
    if statement is None:
        return False
    alone = assess(statement, resources)
    if alone.crisis or alone.personal_advice or alone.small_talk >= SMALL_TALK_FROM or not alone.english:
        return False
    joined = assess(f"{statement.rstrip(' .!')}. {text}", resources)
    return joined.personal_advice and not joined.crisis


def _continues_a_request(found: Assessment, earlier: Sequence[str], resources: Resources) -> bool:
    """A message the learned layer is unsure asks about the writer's own case, right after one it
    read as such a request, continues that request: "i forgot to take it for the last four days",
    then "ok to just take my usual amount tonight?" is one request said in two messages."""
    if found.crisis or found.personal_advice or not found.personal_unsure or not earlier:
        return False
    before = assess(earlier[-1], resources)
    return before.personal_advice and not before.crisis


def screened_route(screen: InputScreen) -> str:
    """The screen's decision as `cafbot judges eval` scores it: its route, with a question read as
    a request about the writer's own case counted as `boundary` (the graph adds boundary cards)."""
    return "boundary" if screen.route == "answer" and screen.personal_advice else screen.route


def is_follow_up(text: str) -> bool:
    """A short message that leans on the conversation: it opens like a continuation ("and for
    teenagers?", "why?", "tell me more") or names no topic of its own ("what does that mean?")."""
    tokens = text.split()
    if not tokens or len(tokens) > FOLLOW_UP_MAX_WORDS:
        return False
    if _FOLLOW_UP_START.match(text):
        return True
    return not _own_words(text) and bool(re.search(r"\b(it|that|this|they|them|those|these)\b", text, re.IGNORECASE))


def adds_no_topic(text: str) -> bool:
    """"Tell me more", "why?": nothing to search for beyond the conversation's own topic."""
    return not _own_words(text)


# "any tips?", "anything to watch out for?": too few words of its own to choose an answer by.
FEW_OWN_WORDS = 3


def says_little(text: str) -> bool:
    """The message has at most `FEW_OWN_WORDS` words of its own (beyond "more", "why", …)."""
    return len(_own_words(text)) <= FEW_OWN_WORDS


def _own_words(text: str) -> frozenset[str]:
    """The message's content words beyond those of a follow-up ("more", "why", …), stemmed."""
    return content_stems(text) - _FOLLOW_UP_STEMS
