"""Medicine names, recognised by their international non-proprietary name stems (-apine, -idone,
…), so names the knowledge base never mentions are recognised too."""

from __future__ import annotations

import re

MEDICINE = re.compile(
    r"\b[a-z]+(?:apine|idone|azole|pride|peridol|azine|thixol|ixol|pirone|piprazole|rone)\b",
    re.IGNORECASE)


def without_medicines(text: str) -> str:
    """`text` with every medicine name taken out: what it says of the medicine, not which one."""
    return re.sub(r"\s{2,}", " ", MEDICINE.sub("", text)).strip()


_MEDICINE_WORD = re.compile(r"\b(?:antipsychotics?|meds?|medicines?|medications?|tablets?|pills?|injections?|"
                            r"jabs?|depots?|doses?|dosage)\b", re.IGNORECASE)


def mentions_medicine(text: str) -> bool:
    """Whether `text` names a medicine or speaks of one ("his new tablets", "my first injection")."""
    return bool(MEDICINE.search(text) or _MEDICINE_WORD.search(text))
