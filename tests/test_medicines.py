"""One medicine vocabulary, as data: the app's recogniser and the judges' word list read the same
file, and a deployment extends it with its own."""

from __future__ import annotations

import pytest

from app.core.errors import ConfigError
from app.core.lexicon import word_list
from app.core.medicines import DEPLOYMENT_FILE, load_vocabulary, names_in, vocabulary


def test_names_are_read_as_the_knowledge_base_says_them():
    assert names_in("is Abilify Maintena like Zyprexa? and lithium, flupenthixol") == [
        "aripiprazole long-acting injection", "olanzapine", "lithium", "flupentixol"]
    # A stem makes an unlisted antipsychotic a medicine; a word that only contains a name is not one.
    assert names_in("what about blonanserin-free brexapine, or an abilifyish plan?") == ["brexapine"]


def test_the_screen_and_the_judges_read_the_same_vocabulary():
    assert word_list("medicines") == vocabulary().names()
    assert {"lithium", "zoloft", "abilify maintena"} <= set(word_list("medicines"))


def test_a_deployment_adds_medicines_and_names_and_keeps_the_products(tmp_path):
    (tmp_path / DEPLOYMENT_FILE).write_text(
        "general_warning_signs: fainting\n"
        "medicines:\n"
        "  vortioxetine: {class: antidepressant, other_names: [Brintellix], warning_signs: a seizure}\n"
        "  lithium: {other_names: [Priadel]}\n")
    deployment = load_vocabulary(tmp_path)
    assert deployment.international_name("Brintellix") == "vortioxetine"
    assert deployment.international_name("priadel") == "lithium"
    assert deployment.data.medicines["lithium"].medicine_class == "mood stabiliser"  # the product's, kept
    assert deployment.warning_signs("he takes Brintellix") == "fainting; on vortioxetine, a seizure"
    assert deployment.warning_signs("he takes lithium") == "fainting"
    assert "vortioxetine" not in load_vocabulary(None).names()


@pytest.mark.parametrize(("text", "message"), [
    ("medicines:\n  lithium: {klass: mood}\n", r"medicines\.yaml: field 'medicines\.lithium\.klass'"),
    ("medicines: [lithium\n", r"medicines\.yaml(:\d+)?: not valid YAML"),
])
def test_a_bad_deployment_file_is_one_line_naming_the_file_and_field(tmp_path, text, message):
    (tmp_path / DEPLOYMENT_FILE).write_text(text)
    with pytest.raises(ConfigError, match=message) as raised:
        load_vocabulary(tmp_path)
    assert "\n" not in str(raised.value)
