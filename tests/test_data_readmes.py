"""Every data folder's README says how many rows each file and folder holds; those counts are
read off the files, so a file that grows without its README fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
READMES = sorted((REPO / "scenarios").rglob("README.md"))
_NAME = re.compile(r"`([^`]+)`")
_NUMBER = re.compile(r"\d[\d,]*")


def rows_in(path: Path) -> int:
    """The rows of a JSONL file, or of every JSONL file directly in a folder."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    return sum(1 for file in files for line in file.read_text(encoding="utf-8").splitlines() if line.strip())


def table(readme: Path) -> tuple[list[str], list[list[str]]]:
    """The README's table: its header cells and its rows' cells."""
    lines = [line for line in readme.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    return (cells[0], cells[2:]) if cells else ([], [])


def number(text: str) -> int:
    return int(text.replace(",", ""))


def claims(readme: Path) -> list[tuple[Path, int]]:
    """(file or folder, rows the README says it holds) for every count it gives."""
    header, rows = table(readme)
    found = []
    for row in rows:
        names = [n for n in _NAME.findall(row[0]) if "XX" not in n]
        if header[-1] == "rows" and "each" not in row[-1]:
            counts = [number(n) for n in _NUMBER.findall(row[-1])]
            assert len(counts) == len(names), f"{readme}: {row[0]} names {len(names)} files, gives {len(counts)} counts"
            found += [(readme.parent / n, c) for n, c in zip(names, counts, strict=True)]
        elif header[0] == "folder" and (total := re.match(r"(\d[\d,]*) (?:messages|requests)\b", row[1])):
            found.append((readme.parent / names[0], number(total.group(1))))
    if total := re.search(r"All (\d[\d,]*) rows", readme.read_text(encoding="utf-8")):
        found.append((readme.parent, number(total.group(1))))
    return found


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_data_readme_counts_the_rows_its_files_hold(readme):
    wrong = [f"{path.relative_to(REPO)}: README says {said}, holds {rows_in(path)}"
             for path, said in claims(readme) if rows_in(path) != said]
    assert not wrong, "\n".join(wrong)


def test_the_readmes_give_counts_to_check():
    checked = {readme.relative_to(REPO).parent.as_posix(): len(claims(readme)) for readme in READMES}
    assert checked["scenarios/screen/train"] >= 25 and checked["scenarios/screen"] >= 4, checked
    assert checked["scenarios/judges"] >= 21 and checked["scenarios/retrieval"] >= 2, checked
    assert checked["scenarios/screen/kinds"] == 5 and checked["scenarios/answers"] >= 7, checked
