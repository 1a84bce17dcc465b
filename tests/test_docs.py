"""The README cannot go stale: its diagram and commands are checked against the real thing."""

import re

from typer.testing import CliRunner

from app.cli.main import cli
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_mermaid_is_the_real_graph():
    shown = re.search(r"```mermaid\n(.*?)```", README, re.DOTALL).group(1).strip()
    drawn = CliRunner().invoke(cli, ["graph"]).output.strip()
    assert shown == drawn


def test_ci_runs_the_readme_test_command():
    quick_start = README.split("## Quick start", 1)[1].split("##", 1)[0]
    commands = re.findall(r"^(make \w+)", quick_start, re.MULTILINE)
    assert commands == ["make app", "make test"]  # one opens the chat, one runs the tests
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^app: .*\n\t\$\(BIN\)/cafbot ui ", makefile, re.MULTILINE)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test$", ci, re.MULTILINE)


def test_every_cli_command_in_the_readme_exists():
    # Commands appear as `cafbot …` in prose or as .venv/bin/cafbot … in code blocks; a group's
    # first word is followed by its sub-command, any other command by its arguments.
    import typer.main

    groups = set(typer.main.get_group(cli).commands) & {
        name for name, command in typer.main.get_group(cli).commands.items() if hasattr(command, "commands")}
    mentioned = re.findall(r"(?:`|\.venv/bin/)cafbot ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?", README)
    commands = {(first, second) if first in groups else (first,) for first, second in mentioned}
    assert {("ask",), ("chat",), ("kb", "check"), ("judges", "eval")} <= commands
    for command in commands:
        result = CliRunner().invoke(cli, [*command, "--help"])
        assert result.exit_code == 0, f"cafbot {' '.join(command)}: {result.output}"


def test_the_readme_is_a_front_door_not_a_notebook():
    assert len(README.splitlines()) <= 350


def test_the_documents_speak_of_the_product_never_of_how_it_was_made():
    process = re.compile(r"\bsession \d+|\bsessions \d+|\bhelpers?\b|fresh[- ]authors?|\bblind raters?\b|"
                         r"\b(?:a|the) (?:third|fourth|fifth|new) author\b|fresh-eyes|\bthe brief\b", re.IGNORECASE)
    documents = [REPO / "README.md", REPO / "CHANGELOG.md", *(REPO / "docs").glob("*.md"),
                 *(REPO / "scenarios").rglob("README.md"), *(REPO / "examples").rglob("README.md")]
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()[:80]}" for path in documents
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if process.search(line)]
    assert not found, "\n".join(found)


def test_every_module_is_small_enough_to_read():
    """Small modules with one job: none of the product's grows past 400 lines."""
    long = [f"{path.relative_to(REPO)}: {n} lines" for package in ("app", "judges", "screening")
            for path in sorted((REPO / package).rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400]
    assert not long, "\n".join(long)
