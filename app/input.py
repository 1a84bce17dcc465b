"""Cleaning a user's message before anything reads it.

Messages arrive with control characters, zero-width and look-alike Unicode, or at novel length.
We normalise what is safe to normalise, tell the user when we changed something that matters
(trimming), and never silently drop their words.
"""

from __future__ import annotations

import re
import unicodedata

from pydantic import BaseModel

from app.core.config_sections import InputLimits

# Zero-width and bidirectional-override characters: invisible, and used to hide injected text.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_SPACES = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n{3,}")



class CleanedInput(BaseModel):
    text: str
    notices: list[str] = []
    empty: bool = False
    refused: bool = False


def clean_message(raw: str, limits: InputLimits) -> CleanedInput:
    text = unicodedata.normalize("NFKC", raw or "")
    text = _INVISIBLE.sub("", text)
    # Control characters other than newline and tab carry no meaning for us.
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    text = _BLANK_LINES.sub("\n\n", _SPACES.sub(" ", text.replace("\t", " "))).strip()
    if not text:
        return CleanedInput(text="", empty=True)
    notices: list[str] = []
    if len(text) > limits.max_chars:
        if limits.on_too_long == "refuse":
            return CleanedInput(
                text=text, refused=True,
                notices=[f"Your message is {len(text):,} characters long; the limit is "
                         f"{limits.max_chars:,}. Please send a shorter question."],
            )
        cut = text.rfind(" ", 0, limits.max_chars)
        text = text[: cut if cut > limits.max_chars // 2 else limits.max_chars].rstrip()
        notices.append(
            f"Your message was long, so I read only its first {len(text):,} characters. "
            "If I missed your question, please send it on its own."
        )
    return CleanedInput(text=text, notices=notices)
