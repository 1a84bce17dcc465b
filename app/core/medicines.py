"""Medicine names, recognised by their international non-proprietary name stems (-apine, -idone,
…), so names the knowledge base never mentions are recognised too."""

from __future__ import annotations

import re

# Brand names people know their medicine by; the knowledge base uses international names, so each
# is read as its own ("what is Abilify?" asks about aripiprazole). A long-acting form's brand is
# read as that medicine's long-acting injection ("is Abilify Maintena given monthly?").
_LONG_ACTING = " long-acting injection"
BRANDS = {
    "abilify": "aripiprazole", "abilify maintena": "aripiprazole" + _LONG_ACTING,
    "aristada": "aripiprazole" + _LONG_ACTING, "zyprexa": "olanzapine",
    "zyprexa relprevv": "olanzapine" + _LONG_ACTING, "zypadhera": "olanzapine" + _LONG_ACTING,
    "risperdal": "risperidone", "risperdal consta": "risperidone" + _LONG_ACTING,
    "seroquel": "quetiapine", "clozaril": "clozapine", "denzapine": "clozapine", "zaponex": "clozapine",
    "versacloz": "clozapine", "invega": "paliperidone", "invega sustenna": "paliperidone" + _LONG_ACTING,
    "invega trinza": "paliperidone" + _LONG_ACTING, "invega hafyera": "paliperidone" + _LONG_ACTING,
    "xeplion": "paliperidone" + _LONG_ACTING, "trevicta": "paliperidone" + _LONG_ACTING,
    "byannli": "paliperidone" + _LONG_ACTING, "haldol": "haloperidol",
    "haldol decanoate": "haloperidol" + _LONG_ACTING, "latuda": "lurasidone", "geodon": "ziprasidone",
    "saphris": "asenapine", "sycrest": "asenapine", "fanapt": "iloperidone", "rexulti": "brexpiprazole",
    "vraylar": "cariprazine", "reagila": "cariprazine", "caplyta": "lumateperone", "solian": "amisulpride",
    "dolmatil": "sulpiride", "depixol": "flupentixol", "fluanxol": "flupentixol", "clopixol": "zuclopenthixol",
    "modecate": "fluphenazine", "largactil": "chlorpromazine", "thorazine": "chlorpromazine",
    "stelazine": "trifluoperazine",
}
# Longest first, so "Abilify Maintena" is read whole before "Abilify".
_BRAND = "|".join(re.escape(b).replace(r"\ ", r"\s+") for b in sorted(BRANDS, key=len, reverse=True))
MEDICINE = re.compile(
    r"\b(?:[a-z]+(?:apine|idone|azole|pride|peridol|azine|thixol|ixol|pirone|piprazole|rone)|" + _BRAND + r")\b",
    re.IGNORECASE)
_BRAND_NAME = re.compile(r"\b(?:" + _BRAND + r")\b", re.IGNORECASE)


def international_name(name: str) -> str:
    """A medicine's name as the knowledge base says it: a brand's international name, else as given."""
    return BRANDS.get(" ".join(name.lower().split()), name)


def names_in(text: str) -> list[str]:
    """The medicines `text` names, in order, by their international names, lower case."""
    return [international_name(name).lower() for name in MEDICINE.findall(text)]


def medicines_named(text: str) -> frozenset[str]:
    """The medicines `text` names, by their international names, lower case."""
    return frozenset(names_in(text))


def with_international_names(text: str) -> str:
    """`text` with every brand name read as its international name."""
    return _BRAND_NAME.sub(lambda found: international_name(found.group(0)), text)


def without_medicines(text: str) -> str:
    """`text` with every medicine name taken out: what it says of the medicine, not which one."""
    return re.sub(r"\s{2,}", " ", MEDICINE.sub("", text)).strip()


_MEDICINE_WORD = re.compile(r"\b(?:antipsychotics?|meds?|medicines?|medications?|tablets?|pills?|injections?|"
                            r"jabs?|depots?|doses?|dosage)\b", re.IGNORECASE)


def mentions_medicine(text: str) -> bool:
    """Whether `text` names a medicine or speaks of one ("his new tablets", "my first injection")."""
    return bool(MEDICINE.search(text) or _MEDICINE_WORD.search(text))
