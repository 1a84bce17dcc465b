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
    assert commands == ["make demo", "make test"]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test$", ci, re.MULTILINE)


def test_every_cli_command_in_the_readme_exists():
    # Commands appear as `cafbot …` in prose or as .venv/bin/cafbot … in code blocks.
    commands = set(re.findall(r"(?:`|\.venv/bin/)cafbot ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", README))
    assert {"ask", "chat", "kb check", "judges eval"} <= {c if c.split()[0] in ("kb", "judges", "config") else c.split()[0] for c in commands}
    for command in commands:
        args = command.split()
        result = CliRunner().invoke(cli, [*args, "--help"])
        if result.exit_code != 0:  # a command followed by an argument, e.g. `cafbot ask "…"`
            result = CliRunner().invoke(cli, [args[0], "--help"])
        assert result.exit_code == 0, f"cafbot {command}: {result.output}"
