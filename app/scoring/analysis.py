"""The compliance-score analysis: raters' rubric scores (0–4) in, agreement and summaries out.

`load_sheet` is the only function that reads a file; the rest are pure functions of a frame with
one row per (item, rater) score. AI pre-ratings are only ever compared with the human scores
(`compare_ai`), never mixed into them.
"""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
from pydantic import model_serializer
from sklearn.metrics import cohen_kappa_score

from app.core.records import Record
from app.scoring.tables import SheetError, read_table, require_columns, sheet_row, whole_number

REQUIRED = ("item_id", "rater", "score")
ITEM_METADATA = ("role", "condition", "sample", "turn")  # one value per item, on each of its rows


class PairKappa(Record):
    rater_a: str
    rater_b: str
    n_items: int  # the items both scored
    kappa: float | None  # quadratic-weighted; None when undefined (a single label between them)


class GroupSummary(Record):
    """One role under one CAF condition, as in the study's Table 2."""

    n: int  # items
    share_ge2: float
    share_ge3: float
    median_by_turn: dict[int, float] | None = None  # median of item medians; None: no turn column

    @model_serializer(mode="wrap")
    def _drop_absent_turns(self, handler):
        # A sheet without turns has no per-turn table: leave the key out rather than print null.
        data = handler(self)
        if self.median_by_turn is None:
            data.pop("median_by_turn", None)
        return data


class Analysis(Record):
    n_items: int
    n_raters: int
    n_scores: int
    median_by_item: dict[str, float]
    within1_agreement: float | None  # items with 2+ scores spanning ≤ 1 point; None: no such item
    krippendorff_alpha_ordinal: float | None  # None when undefined (see `_ordinal_alpha`)
    pairwise_weighted_kappa: list[PairKappa]
    share_ge2: float | None  # items whose median is ≥ 2; None: no items
    share_ge3: float | None
    by_role_condition: dict[str, GroupSummary]  # "<role>/<condition>"


class AiComparison(Record):
    """AI pre-ratings beside the human medians: a comparison, never a substitute for them."""

    n: int  # items with both
    exact_agreement: float | None  # AI == human median rounded half up
    within1_agreement: float | None  # |AI − human median| ≤ 1
    confusion: dict[int, dict[int, int]]  # human (rounded) → AI → items, every score 0..max
    mean_difference: float | None  # AI − human median: > 0 means the AI scores higher


# -- reading a sheet ---------------------------------------------------------------------------
def load_sheet(path: Path, max_score: int = 4) -> pd.DataFrame:
    """The scored rows of a rating sheet (.csv, or .xlsx): item_id, rater, score (int) and
    whichever of role, condition, sample (text) and turn (Int64) it has; missing metadata is NA.
    Rows without a score are not scored yet and left out. Errors raise `SheetError`."""
    raw = read_table(path)
    require_columns(raw, path, REQUIRED)
    sheet = raw[[c for c in (*REQUIRED, *ITEM_METADATA) if c in raw.columns]]
    sheet = sheet.set_axis([sheet_row(i) for i in range(len(sheet))])
    sheet = sheet[sheet["score"] != ""].copy()
    for name in ("item_id", "rater"):
        if (sheet[name] == "").any():
            raise SheetError(f"{path} row {sheet.index[sheet[name] == ''][0]}, column {name}: "
                             "empty, but the row has a score")
    sheet["score"] = [_whole(v, f"{path} row {r}, column score", max_score)
                      for r, v in sheet["score"].items()]
    if "turn" in sheet:
        sheet["turn"] = pd.array([None if v == "" else _whole(v, f"{path} row {r}, column turn")
                                  for r, v in sheet["turn"].items()], dtype="Int64")
    for name in {"role", "condition", "sample"} & set(sheet.columns):
        sheet[name] = sheet[name].replace("", None)
    twice = sheet[sheet.duplicated(["item_id", "rater"], keep=False)]
    if len(twice):
        item, rater = twice.iloc[0][["item_id", "rater"]]
        rows = twice.index[(twice["item_id"] == item) & (twice["rater"] == rater)]
        raise SheetError(f"{path} rows {rows[0]} and {rows[1]}: item {item!r} is scored twice "
                         f"by rater {rater!r}")
    return sheet.astype({"score": int}).reset_index(drop=True)  # int even with no rows


def _whole(text: str, where: str, high: int | None = None) -> int:
    number = whole_number(text, high)
    if number is None:
        span = "of 0 or more" if high is None else f"from 0 to {high}"
        raise SheetError(f"{where}: {text} is not a whole number {span}")
    return number


# -- the analysis ------------------------------------------------------------------------------
def analyse(scores: pd.DataFrame, max_score: int = 4) -> Analysis:
    """Agreement and summaries of `scores` (as `load_sheet` returns it) on a 0..max_score scale;
    item metadata that is missing may be NA or ""."""
    _check(scores, max_score)
    grid = scores.pivot(index="rater", columns="item_id", values="score").astype(float)
    medians = grid.median()  # per item; an even count gives the mean of the middle two
    paired = grid.count() >= 2
    spans = (grid.max() - grid.min())[paired]
    return Analysis(
        n_items=grid.shape[1], n_raters=grid.shape[0], n_scores=len(scores),
        median_by_item={str(item): float(m) for item, m in medians.items()},
        within1_agreement=_mean(spans <= 1),
        krippendorff_alpha_ordinal=_ordinal_alpha(grid, max_score),
        pairwise_weighted_kappa=_pairwise_kappa(grid, max_score),
        share_ge2=_mean(medians >= 2), share_ge3=_mean(medians >= 3),
        by_role_condition=_by_role_condition(_item_metadata(scores), medians),
    )


def _check(scores: pd.DataFrame, max_score: int) -> None:
    """Frames built by hand get the sheet's guarantees too: valid scores, one per item and rater."""
    bad = scores[~scores["score"].isin(range(max_score + 1))]
    if len(bad):
        row = bad.iloc[0]
        raise SheetError(f"scores: item {row['item_id']!r}, rater {row['rater']!r}: {row['score']} "
                         f"is not a whole number from 0 to {max_score}")
    twice = scores[scores.duplicated(["item_id", "rater"])]
    if len(twice):
        row = twice.iloc[0]
        raise SheetError(f"scores: item {row['item_id']!r} is scored twice by rater {row['rater']!r}")


def _mean(values) -> float | None:
    """The mean (of booleans: the share that are true); None for no values."""
    return float(np.mean(values)) if len(values) else None


def _ordinal_alpha(grid: pd.DataFrame, max_score: int) -> float | None:
    """Krippendorff's alpha (ordinal) over raters × items, or None where it is undefined.

    The package raises ValueError when no item has two scores (one rater, say: nothing to pair),
    so that case is caught first; when every pairable score is the same, its expected
    disagreement is 0 and it returns 0/0 = nan. Both are reported as None. Values of the domain
    nobody used change nothing: the ordinal distance only counts values actually given.
    """
    if not (grid.count() >= 2).any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = krippendorff.alpha(reliability_data=grid.to_numpy(dtype=float),
                                   value_domain=list(range(max_score + 1)),
                                   level_of_measurement="ordinal")
    return None if math.isnan(alpha) else float(alpha)


def _pairwise_kappa(grid: pd.DataFrame, max_score: int) -> list[PairKappa]:
    """Quadratic-weighted Cohen's kappa for every pair of raters sharing 2+ items."""
    pairs = []
    for a, b in itertools.combinations(grid.index, 2):
        shared = grid.loc[[a, b]].dropna(axis=1).astype(int)
        if shared.shape[1] < 2:
            continue
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore")  # undefined: sklearn warns and returns nan
            kappa = cohen_kappa_score(shared.loc[a], shared.loc[b], weights="quadratic",
                                      labels=list(range(max_score + 1)))
        pairs.append(PairKappa(rater_a=str(a), rater_b=str(b), n_items=shared.shape[1],
                               kappa=None if math.isnan(kappa) else float(kappa)))
    return pairs


def _item_metadata(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per item with its role, condition, sample and turn; the rows must agree."""
    columns = [c for c in ITEM_METADATA if c in scores.columns]
    rows = scores[["item_id", *columns]].replace("", None)  # an empty cell is not a value
    distinct = rows.groupby("item_id")[columns].nunique()  # NA (not given) is not a value
    for column in columns:
        for item in distinct.index[distinct[column] > 1]:
            values = sorted(map(str, rows.loc[rows["item_id"] == item, column].dropna().unique()))
            raise SheetError(f"item {item!r}: its rows disagree on {column} ({', '.join(values)})")
    return rows.groupby("item_id")[columns].first()  # the first value given


def _by_role_condition(items: pd.DataFrame, medians: pd.Series) -> dict[str, GroupSummary]:
    if not {"role", "condition"} <= set(items.columns):
        return {}
    groups = {}  # groupby leaves out items with no role or no condition
    for (role, condition), group in items.assign(median=medians).groupby(["role", "condition"]):
        by_turn = None
        if "turn" in group.columns:
            turns = group.dropna(subset=["turn"]).groupby("turn")["median"].median()
            by_turn = {int(turn): float(m) for turn, m in turns.items()}
        groups[f"{role}/{condition}"] = GroupSummary(
            n=len(group), share_ge2=_mean(group["median"] >= 2),
            share_ge3=_mean(group["median"] >= 3), median_by_turn=by_turn)
    return groups


# -- AI pre-ratings ----------------------------------------------------------------------------
def round_half_up(median: float) -> int:
    """2.5 → 3. Python's round() goes to even (2.5 → 2 but 3.5 → 4), which would shift
    split medians down or up depending on where they fall."""
    return math.floor(median + 0.5)


def compare_ai(ai: dict[str, int], human_medians: dict[str, float],
               max_score: int = 4) -> AiComparison:
    """How the AI pre-ratings match the human medians, on the items that have both."""
    items = sorted(ai.keys() & human_medians.keys())
    scale = range(max_score + 1)
    confusion = {human: dict.fromkeys(scale, 0) for human in scale}
    for item in items:
        if ai[item] not in scale:
            raise ValueError(f"AI score for item {item!r}: {ai[item]} is not from 0 to {max_score}")
        confusion[round_half_up(human_medians[item])][ai[item]] += 1
    differences = [ai[item] - human_medians[item] for item in items]
    return AiComparison(
        n=len(items), confusion=confusion, mean_difference=_mean(differences),
        exact_agreement=_mean([ai[i] == round_half_up(human_medians[i]) for i in items]),
        within1_agreement=_mean([abs(d) <= 1 for d in differences]),
    )
