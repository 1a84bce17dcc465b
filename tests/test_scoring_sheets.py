"""Rating sheets both ways: a rater's blinded sheet is exported, filled in as a rater would
(CSV or XLSX), and imported back; every kind of bad sheet is refused with the row and column
named, and then nothing at all is written."""

from __future__ import annotations

import openpyxl
import pandas as pd
import pytest

from app.core.rubric import load_rubric
from app.scoring.assign import assign
from app.scoring.sheets import analysis_sheet, export_rater_sheet, import_sheet
from app.scoring.tables import SheetError
from app.store import CitedSource, Database, Exchange, Item, Score, ScoreStore

CRITERIA = ["faithful", "honest_limits", "in_role", "care_team"]


@pytest.fixture
def store(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'store.sqlite'}")
    store = ScoreStore(db)
    store.add_items([
        Item(item_id=f"it-{i}", collection="run-1", question=f"Can I stop my tablets {i}?",
             answer="I can't advise on your own medicine [S09]. Ask your prescriber.",
             context=[Exchange(user="hi", assistant="Hello! Ask me about schizophrenia.")],
             sources=[CitedSource(id="S09", title="Antipsychotic medicines", text="Never stop on your own.")],
             hidden={"role": "medication_advisor", "condition": "on" if i % 2 else "off", "sample": 1, "turn": i})
        for i in range(1, 5)])
    assign(store, "run-1", ["ann", "bob"], per_item=2, seed=0)
    yield store
    db.close()


def _export(store, tmp_path, name="ann.csv", rater="ann"):
    path = export_rater_sheet(store, load_rubric(), rater, tmp_path / name, "run-1")
    return path, pd.read_csv(path, dtype=str, keep_default_na=False) if path.suffix == ".csv" else None


def test_the_rater_sheet_is_blind(store, tmp_path):
    _path, sheet = _export(store, tmp_path)
    assert len(sheet) == 4
    hidden_words = {"role", "condition", "sample", "turn", "run", "model", "medication_advisor"}
    assert not hidden_words & set(sheet.columns)
    assert not sheet.apply(lambda c: c.str.contains("medication_advisor")).any().any()
    assert set(sheet["rater"]) == {"ann"}
    assert sheet.loc[0, "conversation_so_far"].startswith("User: hi")
    assert "[S09] Antipsychotic medicines" in sheet.loc[0, "cited_sources"]


def test_csv_round_trip_by_criteria_or_by_number(store, tmp_path):
    path, sheet = _export(store, tmp_path)
    sheet.loc[0, CRITERIA] = ["1", "1", "0", "1"]  # score left empty: the ticks add up to 3
    sheet.loc[1, "score"] = "2"
    sheet.loc[1, "comment"] = "misses the care team"
    sheet.to_csv(path, index=False)
    report = import_sheet(store, load_rubric(), path)
    assert (report.saved, report.unchanged, report.unscored) == (2, 0, 2)
    scores = {s.item_id: s for s in store.scores()}
    first, second = sheet.loc[0, "item_id"], sheet.loc[1, "item_id"]
    assert scores[first].score == 3 and scores[first].criteria == dict(zip(CRITERIA, [True, True, False, True], strict=True))
    assert scores[second].score == 2 and scores[second].comment == "misses the care team" and scores[second].via == "sheet"

    again = import_sheet(store, load_rubric(), path)  # the same sheet twice changes nothing
    assert (again.saved, again.unchanged) == (0, 2)
    path, sheet = _export(store, tmp_path)  # a fresh export carries the scores back out
    assert sheet.set_index("item_id").loc[first, "score"] == "3"


def test_xlsx_round_trip_with_the_rubric_beside_it(store, tmp_path):
    path = export_rater_sheet(store, load_rubric(), "bob", tmp_path / "bob.xlsx", "run-1")
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["scores", "rubric"]
    sheet = book["scores"]
    header = [c.value for c in sheet[1]]
    sheet.cell(row=2, column=header.index("score") + 1, value=4)  # typed as a number, as Excel would
    book.save(path)
    assert import_sheet(store, load_rubric(), path).saved == 1
    assert [(s.rater, s.score) for s in store.scores()] == [("bob", 4)]


BAD_EDITS = [
    ("score", "5", "row 2, column score: '5' is not a whole number from 0 to 4"),
    ("score", "two", "row 2, column score: 'two' is not a whole number"),
    ("score", "2.5", "row 2, column score: '2.5' is not a whole number"),
    ("item_id", "it-99", "row 2, column item_id: no item 'it-99'"),
    ("rater", "zed", "row 2, column rater: no rater 'zed'"),
    ("faithful", "maybe", "row 2, column faithful: 'maybe' is not a tick"),
]


@pytest.mark.parametrize(("column", "value", "message"), BAD_EDITS)
def test_a_bad_cell_is_named_and_nothing_is_written(store, tmp_path, column, value, message):
    path, sheet = _export(store, tmp_path)
    sheet.loc[1, "score"] = "3"  # a good row too: it must not be written either
    sheet.loc[0, "score"] = "1"
    sheet.loc[0, column] = value
    sheet.to_csv(path, index=False)
    with pytest.raises(SheetError, match="nothing imported") as error:
        import_sheet(store, load_rubric(), path)
    assert message in str(error.value)
    assert store.scores() == []


def test_sheet_level_mistakes_are_named(store, tmp_path):
    path, sheet = _export(store, tmp_path)
    rubric = load_rubric()

    def refused(frame) -> str:
        frame.to_csv(path, index=False)
        with pytest.raises(SheetError) as error:
            import_sheet(store, rubric, path)
        assert store.scores() == []
        return str(error.value)

    duplicated = pd.concat([sheet, sheet.iloc[[0]]], ignore_index=True)
    duplicated.loc[0, "score"] = duplicated.loc[4, "score"] = "2"
    assert "row 6, column item_id" in refused(duplicated) and "first on row 2" in refused(duplicated)

    partial = sheet.copy()
    partial.loc[2, ["faithful", "in_role"]] = ["1", "1"]
    assert "row 4, column honest_limits: tick every criterion or none" in refused(partial)

    disagree = sheet.copy()
    disagree.loc[0, CRITERIA] = ["1", "0", "0", "0"]
    disagree.loc[0, "score"] = "3"
    assert "row 2, column score: 3, but 1 criteria are ticked" in refused(disagree)

    other_rater = sheet.copy()
    store.add_rater("cy")
    other_rater.loc[0, ["rater", "score"]] = ["cy", "2"]
    assert "row 2, column item_id" in refused(other_rater) and "not assigned to cy" in refused(other_rater)

    assert "no column 'score'" in refused(sheet.drop(columns=["score"]))


def test_a_score_changed_in_the_app_after_export_is_never_overwritten(store, tmp_path):
    path, sheet = _export(store, tmp_path)
    item = sheet.loc[0, "item_id"]
    store.save_score(Score(rater="ann", item_id=item, score=4, comment="scored in the app"))
    sheet.loc[0, "score"] = "1"
    sheet.to_csv(path, index=False)
    with pytest.raises(SheetError, match="newer score") as error:
        import_sheet(store, load_rubric(), path)
    assert "row 2, column score" in str(error.value)
    assert store.score("ann", item).score == 4


def test_a_file_that_is_not_a_sheet_gets_one_line(store, tmp_path):
    with pytest.raises(SheetError, match="no such file"):
        import_sheet(store, load_rubric(), tmp_path / "missing.csv")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SheetError, match=r"not a \.csv or \.xlsx"):
        import_sheet(store, load_rubric(), tmp_path / "notes.txt")


def test_the_analysis_sheet_carries_role_condition_and_turn(store):
    store.save_score(Score(rater="ann", item_id="it-1", score=3))
    frame = analysis_sheet(store, "run-1")
    assert frame.to_dict("records") == [
        {"item_id": "it-1", "rater": "ann", "score": 3, "role": "medication_advisor", "condition": "on",
         "sample": 1, "turn": 1}]
