"""Prompt and fixed-reply templates: the text lives beside this file as data, not in code."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from app.core.config_sections import DEFAULT_CRISIS_CONTACTS, CrisisContact
from app.core.datafiles import parse_yaml
from app.core.errors import ConfigError
from app.core.medicines import load_vocabulary
from app.core.profile import Profile
from app.core.records import Record
from judges.rules import load_rules

PROMPTS_DIR = Path(__file__).resolve().parent


@cache
def replies() -> dict[str, str]:
    return parse_yaml((PROMPTS_DIR / "replies.yaml").read_text(encoding="utf-8"))


@cache
def template(name: str) -> str:
    """A prompt template beside this file, by name (`prerate` reads prerate.md)."""
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")


def reply(name: str, profile: Profile | None = None, **values: str) -> str:
    """A fixed reply, worded for the deployment's `profile` (the generic wording if None)."""
    return replies()[name].format(**(profile or Profile()).wording(), **values).strip()


def chat_system_prompt(sources: list[tuple[str, str, str]], warnings: list[tuple[str, str]],
                       profile: Profile | None = None) -> str:
    """The chatbot's system prompt: the shared rules worded for the deployment's `profile`, the
    chosen sources (id, title, text) and pending judge warnings (rule, message)."""
    blocks = [f"[{sid}] {title}\n{text.strip()}" for sid, title, text in sources]
    warning_block = ""
    if warnings:
        lines = "\n".join(f"- ({rule}) {message}" for rule, message in warnings)
        warning_block = (
            "A reviewer flagged problems in your recent answers. Do not repeat them:\n" + lines + "\n"
        )
    return template("chat_system").format(
        rules=load_rules().as_prompt(profile, example_id := sources[0][0] if sources else "S1"),
        example_id=example_id,
        warnings=warning_block,
        sources="\n\n".join(blocks) if blocks else "(none)",
    ).strip()


def contact_lines(contacts: list[CrisisContact]) -> str:
    return "\n".join(f"- {c.name}: {c.contact}" + (f" ({c.note})" if c.note else "") for c in contacts)


class CrisisTranslation(Record):
    """The opening of each crisis reply and the default contacts, in one language the screen reads."""

    crisis: str
    crisis_medical: str
    crisis_overdose: str
    crisis_someone_else: str
    crisis_harm: str
    reach_out: str
    contacts: list[CrisisContact] = Field(min_length=len(DEFAULT_CRISIS_CONTACTS), max_length=len(DEFAULT_CRISIS_CONTACTS))
    in_english: str


@cache
def crisis_translations() -> dict[str, CrisisTranslation]:
    """The crisis replies' openings by language code (crisis_translations.yaml: written and reviewed
    by people, never translated at run time)."""
    path = PROMPTS_DIR / "crisis_translations.yaml"
    data = parse_yaml(path.read_text(encoding="utf-8"))
    try:
        return {code: CrisisTranslation.model_validate(text) for code, text in data.items()}
    except ValidationError as error:
        raise ConfigError(f"{path}: {error.errors()[0]['loc']}: {error.errors()[0]['msg']}") from error


def crisis_reply(contacts: list[CrisisContact], *, continued: bool = False,
                 situation: Literal["", "medical", "overdose", "someone_else", "harm"] = "",
                 language: str = "", profile: Profile | None = None, warning_signs: str = "") -> str:
    """The crisis reply; `continued`: the turn after one, whatever it says; `situation`: someone's
    body is in danger (a collapse, a reaction to a medicine), an overdose has been taken (a doctor
    now, even if it feels all right), the writer is with someone else in
    danger (a daughter locked in the bathroom), or someone may harm another person (the writer
    threatened, or afraid of what they might do), rather than the writer in danger themselves.
    `warning_signs`: what makes a side effect an emergency, for the medicines the message names
    (`Vocabulary.warning_signs`); the general ones when not given."""
    name = f"crisis_{situation}" if situation else "crisis"
    english = reply(f"{name}_continued" if continued else name, profile, contacts=contact_lines(contacts),
                    warning_signs=warning_signs or load_vocabulary(None).warning_signs(""))
    if (translated := crisis_translations().get(language)) is None:
        return english
    # The writer's language first, with the contacts (the defaults in that language, a deployment's
    # own as configured), then the whole reply in English.
    own = translated.contacts if contacts == DEFAULT_CRISIS_CONTACTS else contacts
    return "\n\n".join([getattr(translated, name), f"{translated.reach_out}\n{contact_lines(own)}",
                         f"{translated.in_english}\n\n{english}"])


def topics_list(titles: list[str], limit: int = 12) -> str:
    shown = titles[:limit]
    more = len(titles) - len(shown)
    text = "; ".join(shown)
    return text + (f"; and {more} more" if more > 0 else "")
