"""The built wheel is complete: installed on its own, it answers an offline turn through tier 0.

A source checkout hides missing package data (the code finds the YAML, artefacts and knowledge base
beside it), so this test builds the wheel from the project's files, installs it into a fresh
virtualenv without the checkout, and runs turns from an unrelated directory. Dependencies come
from the test environment's site-packages (added by a .pth line, which does not activate the
editable install there), so nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _project_files(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    # The learned checks are built, not kept in git (`make artefacts` runs before the tests, as
    # before building a release): the wheel carries them.
    built = [str(p.relative_to(ROOT)) for p in (ROOT / "artefacts").glob("*") if p.is_file()]
    for name in [*listed, *built]:
        source = ROOT / name
        if source.is_file() and not name.startswith(("tests/", "scenarios/", "bench/", "docs/")):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the project's files")
    work = tmp_path_factory.mktemp("wheel")
    src, dist, env = work / "src", work / "dist", work / "venv"
    _project_files(src)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(src)],
        check=True, capture_output=True,
    )
    wheel = next(dist.glob("cafbot-*.whl"))
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip())
    (site / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
         str(wheel)],
        check=True, capture_output=True,
    )
    return env


def _ask(env: Path, cwd: Path, *messages: str) -> list[dict]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CAFBOT_")}
    environment["CAFBOT_DATA_DIR"] = str(cwd / "data")
    replies, thread = [], []
    for message in messages:
        done = subprocess.run(
            [env / "bin" / "cafbot", "ask", message, "--json", *thread],
            cwd=cwd, env=environment, capture_output=True, text=True, timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        replies.append(json.loads(done.stdout))
        thread = ["--thread", replies[-1]["thread_id"]]
    return replies


def test_the_wheel_alone_runs_an_offline_turn_through_tier_0(installed, tmp_path):
    where = subprocess.run(
        [installed / "bin" / "python", "-c",
         "import app, judges, screening, artefacts, knowledge_base; print(app.__file__); print(judges.__file__); "
         "print(screening.__file__); print(list(artefacts.__path__)[0])"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout.split()
    assert all(str(installed) in path for path in where), where  # not the checkout

    greeting, answer = _ask(installed, tmp_path, "hi", "What is clozapine?")

    assert greeting["route"] == "small_talk"
    assert answer["route"] in {"answer", "boundary"}
    assert answer["citations"], answer["answer"]
    applied = answer["trace"]["caf"]["judges_applied"]
    assert {"crisis", "source_fidelity", "medication_safety"} <= set(applied)
    assert all(j["tier"] == 0 for j in answer["trace"]["caf"]["judgements"])
