"""Replies to small talk: greetings, thanks, goodbyes, "what can you do?", "are you a bot?", "is
this private?".

The input screen decides that a message is small talk (its learned layer); this module only picks
which kind, from the words people use for each or, when none is there, the learned layer's own
reading ("gonna head off now, night" is a goodbye in no word of its own), and fills in example
questions the knowledge base answers, never one already asked in this conversation.
"""

from __future__ import annotations

import random
import re

from app.core.profile import Profile
from app.prompts import reply

# Checked in this order: "thanks, bye" is a goodbye; "hi, what can you do?" asks what we do;
# "thanks, is this saved?" asks about privacy.
_KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("privacy", re.compile(r"\b(record(ed|ing)?|sav(e|ed|ing)|stor(e|ed|ing)|private|"
                           r"privacy|confidential|anonymous|secret|delete|erase|remove (it|this|my)|"
                           r"keep(ing)? (my|these|our|the) (messages|chats?|conversations?|data)|"
                           r"who (can|could|will|gets to) (see|read|know)|(see|read) (this|my|what i)|my data|"
                           r"data protection|gdpr)\b")),
    ("capabilities", re.compile(r"\b(what (can|do|could) (you|i)|what are you for|how (does|do) (this|it|you) work|"
                                r"what (is|'s) this|help me|what can i ask|what do you (do|know|cover))\b")),
    ("identity", re.compile(r"\b(who (made|built|created|wrote|runs|are)|are you (a |an )?(bot|robot|human|person|real|ai|"
                            r"computer|machine|chatgpt)|is this (a |an )?(bot|human|person|real|ai|chatgpt)|"
                            r"(your|ur) name|talking to (a )?(human|person|bot|machine))\b")),
    ("goodbye", re.compile(r"\b(bye|goodbye|good night|goodnight|night night|see (you|ya)|cheerio|laters|"
                           r"take care|have a (good|nice|great)|that'?s all|i'?m off|gotta go)\b")),
    ("thanks", re.compile(r"\b(thanks?|thank you|thx|ty|cheers|ta|grateful|appreciate|helpful|helped|"
                          r"legend|star|brilliant|great|perfect|lovely)\b")),
    ("apology", re.compile(r"\b(sorry|apologi[sz]e|apologies|my bad|oops|typo)\b")),
    ("greeting", re.compile(r"\b(hi+|hello+|hey+|hiya|heya|yo|howdy|morning|afternoon|evening|g'?day|"
                            r"greetings|namaste|salaam|how are (you|things)|how'?s it going|hru|sup)\b")),
]


# This conversation itself, as opposed to health records ("is this chat private?", "will my doctor
# see what I write here?", "do you keep my messages?").
_THIS_CHAT = re.compile(r"\b(this (chat|conversation|app|bot|service|site)|(chat|talk|write|type|say)(ing)? (here|to you)|"
                        r"what i (write|say|type|tell you)|(my|these|our) (messages|chats?|conversations?)|"
                        r"you (save|store|keep|record|share|read))\b")


def about_this_chat(text: str) -> bool:
    """A question about the privacy of this conversation, whatever the screen made of it: the
    knowledge base's confidentiality of health records would answer it with a false assurance."""
    lowered = text.lower().replace("’", "'")
    return bool(_THIS_CHAT.search(lowered)) and kind_of(lowered) == "privacy"


# The learned layer's small-talk classes that name a kind of reply.
_LEARNED_KINDS = {"farewell": "goodbye", "thanks": "thanks"}


def kind_of(text: str, learned: str = "") -> str:
    """The kind of small talk: by its words, else by the learned layer's reading (`learned`)."""
    lowered = text.lower().replace("’", "'")
    return next((kind for kind, rx in _KINDS if rx.search(lowered)), _LEARNED_KINDS.get(learned, "other"))


EXAMPLES_FROM = 12  # the sources a first visit hears about: the knowledge base's core topics come first


def small_talk_reply(text: str, headline_questions: list[str], asked: set[str], *, seed: int = 0,
                     learned: str = "", models_used: bool = False, profile: Profile | None = None) -> str:
    """The reply for this kind of small talk, with up to three example questions not yet asked:
    each source's headline question (the first of its `questions:`), in the knowledge base's
    order, picked from the first few still unasked, so a newcomer hears about the core topics."""
    kind = kind_of(text, learned)
    fresh = [q for q in headline_questions if q.lower() not in asked][:EXAMPLES_FROM]
    examples = random.Random(seed).sample(fresh, k=min(3, len(fresh)))
    return reply(f"small_talk_{kind}", profile, examples="\n".join(f"- {q}" for q in examples),
                 model_line=" " + reply("privacy_models_used") if models_used else "")
