"""Reading and writing rating sheets as CSV or XLSX (by suffix), every cell as text, so that
validation sees exactly what the rater typed and can name the row and column of a bad cell."""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import pandas as pd

from app.core.errors import CafbotError

SUFFIXES = (".csv", ".xlsx")


class SheetError(CafbotError):
    """A sheet cannot be used; each line of the message names the file, row and column."""


def sheet_row(index: int) -> int:
    """The row number a spreadsheet shows for a data frame's row (the header is row 1)."""
    return index + 2


def read_table(path: Path) -> pd.DataFrame:
    """The sheet's cells as stripped text, column names lower-cased; an empty cell is ''."""
    if path.suffix.lower() not in SUFFIXES:
        raise SheetError(f"{path}: not a .csv or .xlsx file")
    if not path.is_file():
        raise SheetError(f"{path}: no such file")
    try:
        if path.suffix.lower() == ".csv":
            # Blank lines kept, so that row numbers stay those a spreadsheet shows.
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                                skip_blank_lines=False)
        else:
            frame = pd.read_excel(path, dtype=str, keep_default_na=False, sheet_name=0, engine="openpyxl")
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError, zipfile.BadZipFile) as error:
        raise SheetError(f"{path}: cannot be read as a sheet ({str(error).splitlines()[0]})") from error
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    return frame.apply(lambda column: column.astype(str).str.strip())


def whole_number(text: str, high: int | None = None) -> int | None:
    """A cell as a whole number from 0 (to `high`), or None; "3", "3.0" and 3 are all 3."""
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() and 0 <= number <= (math.inf if high is None else high) else None


def require_columns(frame: pd.DataFrame, path: Path, columns: tuple[str, ...]) -> None:
    for column in columns:
        if column not in frame.columns:
            raise SheetError(f"{path}: no column {column!r} (columns: {', '.join(frame.columns) or 'none'})")


def write_table(frames: dict[str, pd.DataFrame], path: Path) -> Path:
    """One CSV (the first frame), or one XLSX with a sheet per frame, wrapped and readable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        next(iter(frames.values())).to_csv(path, index=False, encoding="utf-8")
        return path
    if path.suffix.lower() != ".xlsx":
        raise SheetError(f"{path}: choose a .csv or .xlsx file name")
    from openpyxl.styles import Alignment

    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        for name, frame in frames.items():
            frame.to_excel(writer, sheet_name=name, index=False)
            sheet = writer.sheets[name]
            sheet.freeze_panes = "A2"
            for cells in sheet.columns:
                longest = max((len(str(c.value or "")) for c in cells), default=8)
                sheet.column_dimensions[cells[0].column_letter].width = min(max(10, longest + 2), 60)
                for cell in cells[1:]:
                    cell.alignment = Alignment(wrap_text=True, vertical="top")
    return path
