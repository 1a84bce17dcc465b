"""Medicine names in what people write, and the warning signs that make a side effect an
emergency: one vocabulary, read from data (`medicines.yaml` here, extended by a deployment's
`medicines.yaml` beside its knowledge base).

A word is a medicine's name when the vocabulary lists it (by international name, brand or other
spelling) or when it ends in an international non-proprietary name stem (-apine, -idone, …), so
antipsychotics the vocabulary never lists are recognised too. Brands are read as their
international names, which is how the knowledge base speaks ("what is Abilify?" asks about
aripiprazole).

The vocabulary a process recognises is the product's plus the configured knowledge base's
(`vocabulary()`); warning signs are a deployment's, read for the knowledge base a reply is for
(`load_vocabulary(kb_path)`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import cache, cached_property
from pathlib import Path

from pydantic import Field

from app.core.datafiles import load_yaml
from app.core.records import Record

PRODUCT_FILE = Path(__file__).with_name("medicines.yaml")
DEPLOYMENT_FILE = "medicines.yaml"  # beside a knowledge base
_LONG_ACTING = " long-acting injection"
GENERAL_WARNING_SIGNS = "a high temperature with very stiff muscles or confusion, or a sudden rash"


class Medicine(Record):
    medicine_class: str = Field("", alias="class")  # "antipsychotic", "mood stabiliser"
    other_names: list[str] = Field(default_factory=list)  # brands and other spellings
    long_acting: list[str] = Field(default_factory=list)  # brands of its long-acting injection
    warning_signs: str = ""  # what makes its side effect an emergency ("a fever or sore throat")


class MedicinesFile(Record):
    """The schema of a `medicines.yaml`: the product's, or a deployment's extending it."""

    stems: list[str] = Field(default_factory=list)
    general_warning_signs: str = ""  # for a medicine without its own, or none named
    medicines: dict[str, Medicine] = Field(default_factory=dict)


def _read(path: Path) -> MedicinesFile:
    return load_yaml(path, MedicinesFile)


def _merged(base: MedicinesFile, extra: MedicinesFile) -> MedicinesFile:
    """`extra` over `base`: its medicines added, a listed one's names added to and its class and
    warning signs replaced where `extra` gives them."""
    medicines = dict(base.medicines)
    for name, entry in extra.medicines.items():
        name = name.lower()
        old = medicines.get(name, Medicine())
        medicines[name] = Medicine.model_validate({
            "class": entry.medicine_class or old.medicine_class,
            "other_names": [*old.other_names, *(n for n in entry.other_names if n not in old.other_names)],
            "long_acting": [*old.long_acting, *(n for n in entry.long_acting if n not in old.long_acting)],
            "warning_signs": entry.warning_signs or old.warning_signs})
    return MedicinesFile(stems=[*base.stems, *(s for s in extra.stems if s not in base.stems)],
                         general_warning_signs=extra.general_warning_signs or base.general_warning_signs,
                         medicines=medicines)


class Vocabulary:
    """The medicines one deployment recognises, and their warning signs."""

    def __init__(self, data: MedicinesFile):
        self.data = data
        # Every name, lower case, as its international name (a long-acting brand as that injection).
        self.international: dict[str, str] = {}
        for name, entry in data.medicines.items():
            self.international[name.lower()] = name.lower()
            self.international.update({n.lower(): name.lower() for n in entry.other_names})
            self.international.update({n.lower(): name.lower() + _LONG_ACTING for n in entry.long_acting})

    @cached_property
    def _listed(self) -> str:
        # Longest first, so "Abilify Maintena" is read whole before "Abilify".
        return "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in sorted(self.international, key=len, reverse=True))

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """A medicine's name: listed, or ending in a stem."""
        stems = "|".join(re.escape(s) for s in self.data.stems)
        return re.compile(rf"\b(?:[a-z]+(?:{stems})|{self._listed})\b", re.IGNORECASE)

    @cached_property
    def renamed(self) -> re.Pattern[str]:
        other = [n for n, international in self.international.items() if n != international]
        return re.compile(r"\b(?:" + "|".join(re.escape(n).replace(r"\ ", r"\s+")
                                              for n in sorted(other, key=len, reverse=True)) + r")\b", re.IGNORECASE)

    def names(self) -> list[str]:
        """Every listed name, lower case (the judges' `{medicines}` word list)."""
        return sorted(self.international)

    def international_name(self, name: str) -> str:
        return self.international.get(" ".join(name.lower().split()), name)

    def warning_signs(self, text: str) -> str:
        """The warning signs to name for a message: the general ones, and those of each medicine
        the message names (never another medicine's)."""
        named = {self.international_name(n).removesuffix(_LONG_ACTING).lower() for n in self.pattern.findall(text)}
        own = [f"on {m}, {self.data.medicines[m].warning_signs}" for m in sorted(named)
               if m in self.data.medicines and self.data.medicines[m].warning_signs]
        return "; ".join([self.data.general_warning_signs or GENERAL_WARNING_SIGNS, *own])


@cache
def _product() -> MedicinesFile:
    return _read(PRODUCT_FILE)


@cache
def load_vocabulary(kb_path: Path | None) -> Vocabulary:
    """The product's vocabulary, extended by the `medicines.yaml` beside the knowledge base at
    `kb_path` when there is one."""
    extra = Path(kb_path).resolve() / DEPLOYMENT_FILE if kb_path is not None else None
    return Vocabulary(_merged(_product(), _read(extra)) if extra is not None and extra.is_file() else _product())


@cache
def vocabulary() -> Vocabulary:
    """The vocabulary this process recognises: the product's and the configured knowledge base's."""
    from app.core.config import Settings

    try:
        kb_path = Settings().knowledge_base
    except Exception:
        from app.core.config import DEFAULT_KNOWLEDGE_BASE as kb_path
    return load_vocabulary(kb_path)


def is_medicine_name(word: str) -> bool:
    return vocabulary().pattern.fullmatch(word) is not None


def names_a_medicine(text: str) -> bool:
    return vocabulary().pattern.search(text) is not None


def starts_with_medicine(text: str) -> bool:
    return vocabulary().pattern.match(text) is not None


def international_name(name: str) -> str:
    """A medicine's name as the knowledge base says it: a brand's international name, else as given."""
    return vocabulary().international_name(name)


def names_in(text: str) -> list[str]:
    """The medicines `text` names, in order, by their international names, lower case."""
    return [international_name(name).lower() for name in vocabulary().pattern.findall(text)]


def medicines_named(text: str) -> frozenset[str]:
    """The medicines `text` names, by their international names, lower case."""
    return frozenset(names_in(text))


def with_international_names(text: str) -> str:
    """`text` with every brand name read as its international name."""
    return vocabulary().renamed.sub(lambda found: international_name(found.group(0)), text)


def without_medicines(text: str, instead: str = "") -> str:
    """`text` with every medicine name taken out, or read as `instead`: what it says of the
    medicine, not which one."""
    return re.sub(r"\s{2,}", " ", vocabulary().pattern.sub(instead, text)).strip()


_MEDICINE_WORD = re.compile(r"\b(?:antipsychotics?|meds?|medicines?|medications?|tablets?|pills?|injections?|"
                            r"jabs?|depots?|doses?|dosage)\b", re.IGNORECASE)


def class_words(medicines: Collection[str]) -> re.Pattern[str] | None:
    """The words for the classes of these medicines ("antipsychotic medicine" speaks of clozapine's:
    what it says of the class is true of each of them); None when none of them has a class."""
    listed = vocabulary().data.medicines
    classes = sorted({listed[m].medicine_class for m in medicines if m in listed and listed[m].medicine_class})
    return re.compile(rf"\b(?:{'|'.join(map(re.escape, classes))})s?\b", re.IGNORECASE) if classes else None


def mentions_medicine(text: str) -> bool:
    """Whether `text` names a medicine or speaks of one ("his new tablets", "my first injection")."""
    return names_a_medicine(text) or bool(_MEDICINE_WORD.search(text))
