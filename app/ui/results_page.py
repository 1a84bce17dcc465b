"""The Results page (staff): for a chosen collection, the agreement and the compliance shares per
role and CAF condition, the median per turn, the AI pre-rating beside the human median, and
downloads of the score table, the raters' blinded sheets and the report."""

from __future__ import annotations

import hashlib
import io
import tempfile
import zipfile
from pathlib import Path

import streamlit as st

from app.core.rubric import load_rubric
from app.scoring.report import (
    ai_comparisons,
    analysis_tables,
    collection_analysis,
    percent,
    write_report,
)
from app.scoring.sheets import rater_sheet
from app.scoring.tables import write_table
from app.store import ScoreStore
from app.ui import staff
from app.ui.runtime import score_store


def render() -> None:
    if not staff.signed_in():
        st.error("This page is for staff only.")
        return
    st.set_page_config(layout="wide")  # the tables are wide
    st.title("Results")
    store = score_store()
    collections = store.collections()
    if not collections:
        st.info("No runs to score yet: `cafbot score add-run RUN` adds a drift run.")
        return
    collection = st.selectbox("Collection", list(collections), format_func=lambda c: f"{c} ({collections[c]} answers)")
    frame, result = collection_analysis(store, collection)
    if result is None:
        st.info("No scores yet for this collection.")
        _downloads(store, collection, frame, report=False)
        return
    columns = st.columns(5)
    columns[0].metric("Answers scored", result.n_items)
    columns[1].metric("Raters", result.n_raters)
    columns[2].metric("Scores", result.n_scores)
    columns[3].metric("Within 1 point", percent(result.within1_agreement), help="Share of answers whose raters' scores span at most one point")
    columns[4].metric("Krippendorff α", "n/a" if result.krippendorff_alpha_ordinal is None else f"{result.krippendorff_alpha_ordinal:.2f}",
                      help="Ordinal; 1 is perfect agreement, 0 is chance")
    for title, table in analysis_tables(result).items():
        if title != "Overall":
            st.subheader(title)
            if len(table):
                st.table(table.set_index(table.columns[0]).style.format(precision=2))  # small tables: plain HTML, readable and printable
            else:
                st.caption("(none)")
    ratings = store.ai_ratings(collection)
    for model, comparison in ai_comparisons(ratings, result).items():
        st.subheader(f"AI pre-rating: {model}")
        st.caption("A model's rating beside the human median: a comparison only, never a score.")
        st.write(f"{comparison.n} answers; exact agreement {percent(comparison.exact_agreement)}, "
                 f"within one point {percent(comparison.within1_agreement)}.")
    fingerprint = hashlib.sha256((frame.to_csv(index=False) + repr(
        [(r.item_id, r.model, r.score) for r in ratings])).encode()).hexdigest()
    files = _report_files(collection, fingerprint)
    for figure in ("shares.png", "median_by_turn.png"):
        if figure in files:
            st.image(files[figure], caption=figure.removesuffix(".png").replace("_", " "))
    _downloads(store, collection, frame, report=True, report_zip=_zip(files))


@st.cache_data(max_entries=8, show_spinner="Drawing the figures…")
def _report_files(collection: str, fingerprint: str) -> dict[str, bytes]:
    """The report's files, drawn again only when the scores or AI ratings change (`fingerprint`),
    not on every click on the page."""
    with tempfile.TemporaryDirectory() as folder:
        write_report(score_store(), collection, Path(folder))
        return {file.name: file.read_bytes() for file in sorted(Path(folder).iterdir())}


def _downloads(store: ScoreStore, collection: str, frame, *, report: bool, report_zip: bytes = b"") -> None:
    st.subheader("Downloads")
    st.download_button("Scores (CSV, unblinded, for analysis)", frame.to_csv(index=False), f"{collection}-scores.csv",
                       "text/csv")
    if report:
        st.download_button("Report (Markdown, figures and tables, zipped)", report_zip, f"{collection}-report.zip",
                           "application/zip")
    raters = sorted({a.rater for a in store.assignments(collection)})
    if raters:
        rater = st.selectbox("A rater's blinded sheet", raters)
        with tempfile.TemporaryDirectory() as folder:
            path = write_table({"scores": rater_sheet(store, load_rubric(), rater, collection)}, Path(folder) / "sheet.xlsx")
            data = path.read_bytes()
        st.download_button(f"{rater}'s sheet (XLSX)", data, f"{collection}-{rater}.xlsx",
                           "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()
