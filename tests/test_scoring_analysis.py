"""The compliance-score analysis: every expected figure is worked out by hand in a comment, or
taken from Krippendorff's published example; sheet errors are one line naming file, row, column."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from app.scoring.analysis import SheetError, analyse, compare_ai, load_sheet, round_half_up


def frame(scores: dict[str, dict[str, int]], **metadata: dict[str, object]) -> pd.DataFrame:
    """Rows from {item: {rater: score}}; each metadata column given as {item: value}."""
    rows = [{"item_id": item, "rater": rater, "score": score,
             **{name: values[item] for name, values in metadata.items()}}
            for item, by_rater in scores.items() for rater, score in by_rater.items()]
    return pd.DataFrame(rows)


# Five items, three raters (cai did not score q3):
#   item  role   condition turn  ana ben cai  median  span
#   q1    nurse  on        1     4   3   4    4       1
#   q2    nurse  off       1     1   3   1    1       2
#   q3    nurse  on        1     2   3   -    2.5     1   (even count: mean of 2 and 3)
#   q4    nurse  on        1     2   2   3    2       1
#   q5    nurse  on        2     0   1   0    0       1
# within 1 point: all but q2 -> 4/5; median >= 2: q1, q3, q4 -> 3/5; >= 3: q1 -> 1/5.
# nurse/on: q1, q3, q4, q5 -> n 4, >= 2: 3/4, >= 3: 1/4;
#   turn 1: median(4, 2.5, 2) = 2.5 (the mean would be 2.83), turn 2: 0.
# nurse/off: q2 -> n 1, >= 2: 0, >= 3: 0; turn 1: 1.0.
STUDY = frame(
    {"q1": {"ana": 4, "ben": 3, "cai": 4}, "q2": {"ana": 1, "ben": 3, "cai": 1},
     "q3": {"ana": 2, "ben": 3}, "q4": {"ana": 2, "ben": 2, "cai": 3},
     "q5": {"ana": 0, "ben": 1, "cai": 0}},
    role=dict.fromkeys(["q1", "q2", "q3", "q4", "q5"], "nurse"),
    condition={"q1": "on", "q2": "off", "q3": "on", "q4": "on", "q5": "on"},
    turn={"q1": 1, "q2": 1, "q3": 1, "q4": 1, "q5": 2},
)


def test_medians_agreement_shares_and_table_2_on_a_hand_made_example():
    result = analyse(STUDY)
    assert (result.n_items, result.n_raters, result.n_scores) == (5, 3, 14)
    assert result.median_by_item == {"q1": 4.0, "q2": 1.0, "q3": 2.5, "q4": 2.0, "q5": 0.0}
    assert result.within1_agreement == pytest.approx(0.8)
    assert (result.share_ge2, result.share_ge3) == (pytest.approx(0.6), pytest.approx(0.2))
    on, off = result.by_role_condition["nurse/on"], result.by_role_condition["nurse/off"]
    assert (on.n, on.share_ge2, on.share_ge3) == (4, 0.75, 0.25)
    assert on.median_by_turn == {1: 2.5, 2: 0.0}
    assert (off.n, off.share_ge2, off.share_ge3, off.median_by_turn) == (1, 0.0, 0.0, {1: 1.0})
    assert set(result.by_role_condition) == {"nurse/on", "nurse/off"}


def test_the_json_has_exactly_the_agreed_keys():
    data = analyse(STUDY).model_dump(mode="json")
    assert set(data) == {
        "n_items", "n_raters", "n_scores", "median_by_item", "within1_agreement",
        "krippendorff_alpha_ordinal", "pairwise_weighted_kappa", "share_ge2", "share_ge3",
        "by_role_condition"}
    assert data["by_role_condition"]["nurse/on"]["median_by_turn"] == {"1": 2.5, "2": 0.0}
    assert set(data["pairwise_weighted_kappa"][0]) == {"rater_a", "rater_b", "n_items", "kappa"}


def test_without_a_turn_column_the_groups_have_no_per_turn_table():
    data = analyse(STUDY.drop(columns="turn")).model_dump(mode="json")
    assert data["by_role_condition"]["nurse/off"] == {"n": 1, "share_ge2": 0.0, "share_ge3": 0.0}


def test_without_role_and_condition_there_is_no_breakdown():
    assert analyse(STUDY.drop(columns=["role"])).by_role_condition == {}


@pytest.mark.parametrize("missing", [None, ""])
def test_an_item_without_a_role_is_left_out_of_the_breakdown_only(missing):
    unassigned = STUDY.assign(role=STUDY["role"].where(STUDY["item_id"] != "q2", missing))
    result = analyse(unassigned)
    assert set(result.by_role_condition) == {"nurse/on"}
    assert result.n_items == 5


def test_an_empty_cell_does_not_disagree_with_a_given_value():
    # q4's role and turn are blank on ben's row only: still nurse, turn 1.
    partly = STUDY.astype({"turn": object})
    partly.loc[(partly["item_id"] == "q4") & (partly["rater"] == "ben"), ["role", "turn"]] = ""
    assert analyse(partly) == analyse(STUDY)


def test_items_whose_rows_disagree_on_the_condition_are_an_error_naming_the_item():
    mixed = STUDY.copy()
    mixed.loc[(mixed["item_id"] == "q4") & (mixed["rater"] == "ben"), "condition"] = "off"
    with pytest.raises(SheetError, match=r"item 'q4': its rows disagree on condition \(off, on\)"):
        analyse(mixed)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the example with missing
# data: observers A-D by units 1-12, '*' not coded. Published: ordinal alpha = 0.815.
PUBLISHED = """\
A: 1 2 3 3 2 1 4 1 2 * * *
B: 1 2 3 3 2 2 4 1 2 5 * 3
C: * 3 3 3 2 3 4 2 2 5 1 *
D: 1 2 3 3 2 4 4 1 2 5 1 *"""


def test_ordinal_alpha_matches_krippendorffs_published_example():
    rows = [{"item_id": f"unit{unit:02d}", "rater": observer, "score": int(value)}
            for observer, values in (line.split(": ") for line in PUBLISHED.splitlines())
            for unit, value in enumerate(values.split(), 1) if value != "*"]
    # Values run 1-5: on a 0..5 scale the unused 0 adds nothing to the ordinal distances.
    result = analyse(pd.DataFrame(rows), max_score=5)
    assert result.krippendorff_alpha_ordinal == pytest.approx(0.815, abs=0.001)
    assert (result.n_items, result.n_raters, result.n_scores) == (12, 4, 41)


# Two raters, four shared items (cai shares only one with each, so no pair with cai):
#   ana: 0 1 2 2      ben: 0 2 2 1
# Quadratic weights w(i, j) = (i - j)^2. Observed: 0 + 1 + 0 + 1 = 2 over 4 items.
# Both raters' marginals are 0:1, 1:1, 2:2, so expected counts are a_i * b_j / 4, and the expected
# weighted disagreement is sum a_i b_j (i - j)^2 / 4 = (1 + 8 + 1 + 2 + 8 + 2) / 4 = 22 / 4.
# kappa = 1 - 2 / (22 / 4) = 1 - 8 / 22 = 7 / 11.
def test_quadratic_weighted_kappa_matches_the_hand_computation():
    scores = frame({"a": {"ana": 0, "ben": 0, "cai": 4}, "b": {"ana": 1, "ben": 2},
                    "c": {"ana": 2, "ben": 2}, "d": {"ana": 2, "ben": 1}, "e": {"cai": 3}})
    [pair] = analyse(scores).pairwise_weighted_kappa
    assert (pair.rater_a, pair.rater_b, pair.n_items) == ("ana", "ben", 4)
    assert pair.kappa == pytest.approx(7 / 11)


def test_kappa_and_alpha_are_none_when_nobody_varies():
    # Both raters give 3 to everything: no expected disagreement, so both statistics are 0/0.
    scores = frame({"a": {"ana": 3, "ben": 3}, "b": {"ana": 3, "ben": 3}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and quietly: nan and its warnings stay inside
        result = analyse(scores)
    assert result.krippendorff_alpha_ordinal is None
    assert result.pairwise_weighted_kappa[0].kappa is None
    assert result.within1_agreement == 1.0


def test_one_rater_leaves_agreement_undefined_without_an_error():
    result = analyse(frame({"a": {"ana": 1}, "b": {"ana": 4}}))
    assert result.krippendorff_alpha_ordinal is None
    assert result.within1_agreement is None
    assert result.pairwise_weighted_kappa == []
    assert result.median_by_item == {"a": 1.0, "b": 4.0}
    assert (result.share_ge2, result.share_ge3) == (0.5, 0.5)


def test_analyse_refuses_scores_off_the_scale():
    with pytest.raises(SheetError, match=r"item 'a', rater 'ana': 5 is not a whole number from 0 to 4"):
        analyse(frame({"a": {"ana": 5, "ben": 1}}))


# AI against human medians; q5 has no AI rating and q9 no human one, so n = 4:
#   item  human  rounded  ai  exact  within 1  ai - human
#   q1    4.0    4        4   yes    yes        0
#   q2    1.0    1        3   no     no         2
#   q3    2.5    3        3   yes    yes        0.5
#   q4    2.0    2        3   no     yes        1
# exact 2/4, within 1: 3/4, mean difference 3.5 / 4 = 0.875.
def test_compare_ai_against_the_human_medians():
    result = compare_ai({"q1": 4, "q2": 3, "q3": 3, "q4": 3, "q9": 0},
                        {"q1": 4.0, "q2": 1.0, "q3": 2.5, "q4": 2.0, "q5": 3.0})
    assert result.n == 4
    assert (result.exact_agreement, result.within1_agreement) == (0.5, 0.75)
    assert result.mean_difference == pytest.approx(0.875)
    ones = {(human, ai) for human, row in result.confusion.items() for ai, n in row.items() if n}
    assert ones == {(4, 4), (1, 3), (3, 3), (2, 3)}
    assert all(result.confusion[h][a] == 1 for h, a in ones)
    assert sorted(result.confusion) == [0, 1, 2, 3, 4]
    assert all(sorted(row) == [0, 1, 2, 3, 4] for row in result.confusion.values())


def test_compare_ai_with_nothing_in_common():
    result = compare_ai({"q1": 2}, {"q2": 2.0})
    assert (result.n, result.exact_agreement, result.mean_difference) == (0, None, None)


def test_split_medians_round_half_up_not_to_even():
    assert [round_half_up(m) for m in (0.5, 1.5, 2.5, 3.5, 2.0, 2.4)] == [1, 2, 3, 4, 2, 2]


# -- the rating sheet --------------------------------------------------------------------------
def write_csv(tmp_path, text: str):
    path = tmp_path / "scores.csv"
    path.write_text(text, encoding="utf-8")
    return path


def sheet_error(path) -> str:
    with pytest.raises(SheetError) as caught:
        load_sheet(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("value", "shown"), [("5", "5"), ("x", "x"), ("3.5", "3.5"), ("-1", "-1")])
def test_a_bad_score_names_file_row_and_column(tmp_path, value, shown):
    path = write_csv(tmp_path, f"item_id,rater,score\nq1,ana,3\nq1,ben,{value}\n")
    assert sheet_error(path) == (
        f"{path} row 3, column score: {shown} is not a whole number from 0 to 4")


def test_a_missing_column_is_named_with_the_columns_there_are(tmp_path):
    path = write_csv(tmp_path, "item_id,score,notes\nq1,3,fine\n")
    assert sheet_error(path) == f"{path}: no column 'rater' (columns: item_id, score, notes)"


def test_the_same_item_and_rater_twice_names_both_rows(tmp_path):
    path = write_csv(tmp_path, "item_id,rater,score\nq1,ana,3\nq2,ana,1\nq1,ana,4\n")
    assert sheet_error(path) == f"{path} rows 2 and 4: item 'q1' is scored twice by rater 'ana'"


def test_a_score_without_a_rater_names_the_row(tmp_path):
    path = write_csv(tmp_path, "item_id,rater,score\nq1,ana,3\nq1,,2\n")
    assert sheet_error(path) == f"{path} row 3, column rater: empty, but the row has a score"


def test_columns_match_loosely_unscored_rows_are_skipped_and_scores_may_look_like_floats(tmp_path):
    path = write_csv(tmp_path, " Item_ID ,RATER,Score,Notes,Turn\n"
                               "q1,ana,3.0,ok,1\nq1,ben,,not yet,1\nq2,ana, 4 ,,\n")
    sheet = load_sheet(path)
    assert list(sheet.columns) == ["item_id", "rater", "score", "turn"]
    assert sheet[["item_id", "rater", "score"]].values.tolist() == [["q1", "ana", 3], ["q2", "ana", 4]]
    assert sheet["turn"].tolist() == [1, pd.NA]


def test_csv_and_xlsx_load_alike(tmp_path):
    written = STUDY.assign(sample=1, notes="free text")
    written.loc[0, "score"] = None  # not scored yet: left out of both
    written.to_csv(tmp_path / "scores.csv", index=False)
    written.to_excel(tmp_path / "scores.xlsx", index=False)
    from_csv, from_xlsx = load_sheet(tmp_path / "scores.csv"), load_sheet(tmp_path / "scores.xlsx")
    pd.testing.assert_frame_equal(from_csv, from_xlsx)
    assert len(from_csv) == len(STUDY) - 1
    assert from_csv["score"].tolist() == STUDY["score"].tolist()[1:]
    assert from_csv["condition"].tolist() == STUDY["condition"].tolist()[1:]
    assert analyse(from_xlsx) == analyse(from_csv)
    assert analyse(from_csv).median_by_item["q1"] == 3.5  # ana's 4 left out: ben 3, cai 4
