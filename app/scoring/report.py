"""The scoring report of one collection: the analysis as tables (CSV), figures (PNG) and a
Markdown page that puts them together, in the study's layout (shares >= 2 and >= 3 per role and
CAF condition; the median score per facilitator turn)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from app.scoring.analysis import AiComparison, Analysis, analyse, compare_ai
from app.scoring.sheets import analysis_sheet
from app.store import AiRating, ScoreStore


def analysis_tables(result: Analysis) -> dict[str, pd.DataFrame]:
    """The analysis as titled tables, for the terminal, the Results page and the report's CSVs."""
    overall = pd.DataFrame([{
        "items": result.n_items, "raters": result.n_raters, "scores": result.n_scores,
        "within-1 agreement": result.within1_agreement, "Krippendorff alpha (ordinal)": result.krippendorff_alpha_ordinal,
        "share >= 2": result.share_ge2, "share >= 3": result.share_ge3}])
    groups = pd.DataFrame([{"role": key.split("/")[0], "condition": key.split("/")[1], "items": g.n,
                            "share >= 2": g.share_ge2, "share >= 3": g.share_ge3}
                           for key, g in result.by_role_condition.items()])
    turns = pd.DataFrame([{"role": key.split("/")[0], "condition": key.split("/")[1],
                           **{f"turn {t}": m for t, m in sorted((g.median_by_turn or {}).items())}}
                          for key, g in result.by_role_condition.items() if g.median_by_turn])
    kappas = pd.DataFrame([k.model_dump() for k in result.pairwise_weighted_kappa],
                          columns=["rater_a", "rater_b", "n_items", "kappa"])
    return {"Overall": overall.round(3), "By role and condition": groups.round(3),
            "Median score per turn": turns, "Pairwise weighted kappa (quadratic)": kappas.round(3)}


def ai_comparisons(ratings: list[AiRating], result: Analysis) -> dict[str, AiComparison]:
    """Each pre-rating model against the human medians."""
    by_model: dict[str, dict[str, int]] = {}
    for rating in ratings:
        by_model.setdefault(rating.model, {})[rating.item_id] = rating.score
    return {model: compare_ai(scores, result.median_by_item) for model, scores in by_model.items()}


def collection_analysis(store: ScoreStore, collection: str) -> tuple[pd.DataFrame, Analysis | None]:
    """The collection's scores with their hidden metadata, and their analysis (None: no scores yet)."""
    frame = analysis_sheet(store, collection)
    return frame, (analyse(frame) if len(frame) else None)


def write_report(store: ScoreStore, collection: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    frame, result = collection_analysis(store, collection)
    frame.to_csv(folder / "scores.csv", index=False)
    lines = [f"# Compliance scores: {collection}", ""]
    if result is None:
        lines.append("No scores yet: assign raters (`cafbot score assign`) and score in the app or by sheet.")
        return _write(folder, lines)
    tables = analysis_tables(result)
    for title, table in tables.items():
        table.to_csv(folder / f"{_slug(title)}.csv", index=False)
    lines += ["Raters scored each answer 0–4 on the rubric (`scenarios/rubric.yaml`), blind to the CAF "
              "condition. Agreement is the share of answers whose scores span at most one point.", ""]
    for title, table in tables.items():
        lines += [f"## {title}", "", _markdown(table), ""]
    if result.by_role_condition:
        lines += ["![Shares of answers scoring at least 2 and 3](shares.png)", ""]
        _plot_shares(result, folder / "shares.png")
        if any(g.median_by_turn for g in result.by_role_condition.values()):
            lines += ["![Median score per turn](median_by_turn.png)", ""]
            _plot_turns(result, folder / "median_by_turn.png")
    for model, comparison in ai_comparisons(store.ai_ratings(collection), result).items():
        confusion = pd.DataFrame(comparison.confusion).T.rename_axis("human \\ AI").reset_index()
        confusion.to_csv(folder / f"ai_confusion_{_slug(model)}.csv", index=False)
        lines += [f"## AI pre-rating by {model} (a comparison only; never a human score)", "",
                  f"{comparison.n} answers rated by both; exact agreement with the human median "
                  f"{percent(comparison.exact_agreement)}, within one point {percent(comparison.within1_agreement)}, "
                  f"mean difference (AI − human) {comparison.mean_difference if comparison.mean_difference is None else round(comparison.mean_difference, 2)}.",
                  "", _markdown(confusion), ""]
    return _write(folder, lines)


def _write(folder: Path, lines: list[str]) -> Path:
    path = folder / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _plot_shares(result: Analysis, path: Path) -> None:
    plt = _pyplot()
    keys = sorted(result.by_role_condition)
    figure, axis = plt.subplots(figsize=(max(5, 0.9 * len(keys) + 2), 3.5))
    x = range(len(keys))
    axis.bar([i - 0.2 for i in x], [result.by_role_condition[k].share_ge2 for k in keys], 0.4, label="score >= 2")
    axis.bar([i + 0.2 for i in x], [result.by_role_condition[k].share_ge3 for k in keys], 0.4, label="score >= 3")
    axis.set_xticks(list(x), [k.replace("_", " ").replace("/", "\nCAF ") for k in keys], fontsize="small")
    axis.set_ylim(0, 1.05)
    axis.set_ylabel("share of answers (median score)")
    axis.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _plot_turns(result: Analysis, path: Path) -> None:
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 3.5))
    for key, group in sorted(result.by_role_condition.items()):
        if group.median_by_turn:
            turns = sorted(group.median_by_turn)
            axis.plot(turns, [group.median_by_turn[t] for t in turns], marker="o",
                      linestyle="-" if key.endswith("/on") else "--", label=key.replace("/", ", CAF "))
    axis.set_xlabel("facilitator turn")
    axis.set_ylabel("median score")
    axis.set_ylim(-0.2, 4.2)
    axis.legend(fontsize="x-small", loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _markdown(table: pd.DataFrame) -> str:
    if table.empty:
        return "(none)"
    header = "| " + " | ".join(str(c) for c in table.columns) + " |"
    rule = "|" + "---|" * len(table.columns)
    rows = ["| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")
