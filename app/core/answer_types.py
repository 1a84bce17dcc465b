"""What kind of answer a question wants, and whether a sentence gives that kind.

"What is family intervention?" wants a definition, "how long does it go on for?" a length of
time, "how often…?" a frequency, "why…?" a reason. A sentence on the right topic that gives the
wrong kind ("Research shows family intervention can reduce relapses" for "what is it?") answers
a different question, so the composer leads with one of the wanted kind. This is the classic
answer-type step of question answering, kept to kinds a regular expression can recognise.
"""

from __future__ import annotations

import re
from typing import Literal

AnswerType = Literal["definition", "duration", "frequency", "reason"]

_WANTS: list[tuple[AnswerType, re.Pattern[str]]] = [
    ("frequency", re.compile(r"\bhow (?:often|many times|frequently)\b", re.IGNORECASE)),
    ("duration", re.compile(r"\bhow long\b|\b(?:forever|for life|permanent(?:ly)?|ever (?:stop|end|go away))\b",
                            re.IGNORECASE)),
    ("reason", re.compile(r"^\W*(?:and |so |but )?why\b|\bwhat(?:'s| is) the (?:point|reason)\b", re.IGNORECASE)),
    # "what is …?", "what sort of drug is …?"; not "what is the best …?"
    ("definition", re.compile(r"^\W*(?:and |so |ok |but )?(?:what(?:'s| is| are)|whats|wat is"
                              r"|what (?:sort|kind|type) of \w+ (?:is|are))\b(?! (?:the )?"
                              r"(?:best|point|reason|chance|risk|difference|next|signs?|treatment)\b)"
                              r"|\bwhat does (?:\w+ ){1,4}mean\b|\bmeaning of\b", re.IGNORECASE)),
]

_TIME = r"(?:minutes?|hours?|days?|weeks?|months?|years?|sessions?|fortnight)"
_NUMBER = r"(?:\d+|a|an|one|two|three|four|five|six|ten|twelve|several|a few|a couple of)"
_GIVES: dict[AnswerType, re.Pattern[str]] = {
    "definition": re.compile(r"^(?:[\w\"'()-]+[ ,]+){0,12}?(?:is|are|means?|refers? to)\s+"
                             r"(?:a|an|the|when|what|something|someone|one|to|called)\b", re.IGNORECASE),
    "duration": re.compile(rf"\b{_NUMBER}(?: to {_NUMBER})? {_TIME}\b|\bfor (?:life|years|as long as)\b"
                           r"|\bas long as\b|\blong[- ](?:term|lasting)\b|\bpermanent\b|\blifelong\b",
                           re.IGNORECASE),
    "frequency": re.compile(rf"\b(?:every|each|once|twice|three times)(?: a| per)? (?:{_NUMBER} )?{_TIME}"
                            r"|\b(?:daily|weekly|fortnightly|monthly|yearly|annually)\b"
                            r"|\b(?:most|less|more) (?:often|frequent)\b|\bhow often\b", re.IGNORECASE),
    "reason": re.compile(r"\b(?:because|so that|the reason|this is why|that is why|in order to|"
                         r"which (?:means|helps|can)|to (?:check|make sure|help|prevent|protect|lower|reduce))\b",
                         re.IGNORECASE),
}


_YES_OR_NO = re.compile(r"^\W*(?:(?:and|so|but|ok|okay|also|then|hmm|right)\W+)?(?:is|isn'?t|are|aren'?t|am|was|were|"
                        r"does|doesn'?t|do|don'?t|did|can|can'?t|could|will|won'?t|would|should|shall|may|"
                        r"might|has|have|had)\b(?! there\b)", re.IGNORECASE)
_OPEN = re.compile(r"^\W*(?:(?:and|so|but|ok|okay|also|then)\W+)?(?:what|whats|wat|how|which|who|where|when|why|"
                   r"tell me|explain|describe|list)\b", re.IGNORECASE)


def _typed_sentences(message: str) -> list[str]:
    """A message's sentences as typed: split after ".", "?" or "!", whatever case follows."""
    return [s for s in re.split(r"(?<=[.?!])\s+", message.strip()) if s]


def asks_yes_or_no(question: str) -> bool:
    """A question that asks whether one thing is so ("does it make you sleepy?", "is weight gain
    normal?"), not for a set of things ("what are the side effects?", "what can I do?", "is there
    any support?")."""
    sentences = _typed_sentences(question)
    return any(_YES_OR_NO.match(s) for s in sentences) and not any(_OPEN.match(s) for s in sentences)


def what_it_tells(message: str) -> str:
    """The message without its questions: what it tells ("I'm home and my mum is here. what's
    clozapine?" tells "I'm home and my mum is here."); all of it when it only asks."""
    told = [s for s in _typed_sentences(message) if not s.endswith("?") and not _OPEN.match(s)]
    return " ".join(told) if told else message.strip()


# A request in other words than a question ("please explain…", "I need to know…", "any tips").
_REQUEST = re.compile(r"\b(?:please|pls|plz|help|advice|tips?|ideas?|info|information|need to know|want to know|"
                      r"wondering|wonder|curious|explain|tell me|can you|could you|would you|"
                      r"(?:don'?t|do not|not sure|no idea|unsure) (?:know )?(?:what|how|why|if|whether|where|who))\b"
                      # A problem told is a request too ("he won't take his meds", "she keeps…").
                      r"|n'?t\b|\b(?:wont|cant|dont|doesnt|isnt|not|never|refuses?|refused|keeps?|stopped|worse|"
                      r"scared|worried|struggling|problems?)\b", re.IGNORECASE)
# Who a statement is about: without one, a message that asks nothing is a search ("clozapine side
# effects"), not something said.
_PERSONAL = re.compile(r"\b(?:i|i'?m|im|i'?ve|ive|my|me|we|we'?re|our|us|he|he'?s|she|she'?s|his|her|they|they'?re|"
                       r"their|them)\b", re.IGNORECASE)


_RUN_ON_QUESTION = re.compile(r"\b(?:what|whats|how|which|who|where|when|why)\s+(?:does|do|is|are|was|were|can|"
                              r"could|should|would|will|did|to|now|next)\b|(?<!\bsee )\bwhat happens\b"
                              # …or a yes/no question after what it is about: "he's hardly slept
                              # for 3 nights is that a warning sign", "is there any hope for her".
                              r"|(?:^|(?<!\bthat )(?<!\bthis )(?<!\bit )(?<!\bwhat )(?<!\bwhere )(?<!\bhow )"
                              r"(?<!\bwho )(?<!\bwhether )(?<!\bif )(?<!\bhere ))"
                              r"\b(?:(?:is|are|can|could|will|would|should|does|am)\s+(?:i|we|you|they|he|she|it|that|this)"
                              r"|(?:is|are)\s+there(?!\s+(?:for|with|at|in|on|to|now|too|again|every|all)\b)"
                              r"|(?:do|did)\s+(?:i|we|you|they|he|she))\s+\w",  # not "I'll do it tonight"
                              re.IGNORECASE)


def asks_anything(message: str) -> bool:
    """Whether the message asks something, as a question, a request or a search ("clozapine side
    effects"); "my brother started clozapine 2 weeks ago" only says something about someone."""
    if "?" in message or _REQUEST.search(message) or not _PERSONAL.search(message):
        return True
    # Any clause may ask: "stress makes it worse, how do i calm down"; so may a question run on
    # without punctuation ("my nurse mentioned a 'relapse signature' what does that mean").
    clauses = [c for c in re.split(r"(?<=[.!,;:])\s+|\s+(?:and|but|so|or)\s+", message.strip()) if c]
    return any(_YES_OR_NO.match(c) or _OPEN.match(c) for c in clauses) or bool(_RUN_ON_QUESTION.search(message))


def wanted(question: str) -> AnswerType | None:
    """The kind of answer `question` asks for, if it is one we recognise."""
    return next((kind for kind, pattern in _WANTS if pattern.search(question)), None)


def gives(kind: AnswerType, sentence: str) -> bool:
    """Whether `sentence` gives an answer of that kind."""
    return bool(_GIVES[kind].search(sentence))
