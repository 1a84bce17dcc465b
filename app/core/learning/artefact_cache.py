"""Built learned models kept outside the checkout, so that another clone of the same code and data
(CI's fresh clone, a second working copy) copies them instead of training for a quarter of an hour.

An entry is used only when everything its fit read is byte for byte what this checkout holds: the
feature version and training data (from its model card), every source file the training process
had loaded and the data files beside them, and the other artefacts in the folder (the context model
learns from the screen's readings). Anything else trains, as without a cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from app.core.config import REPO_ROOT
from app.core.learning import artefacts

CACHE_DIR = Path(os.environ.get("CAFBOT_ARTEFACT_CACHE") or Path.home() / ".cache" / "cafbot" / "artefacts")
KEEP = 4  # entries per check; older ones go, so the cache stays a few hundred megabytes at most
_INPUTS = "inputs.json"


def restore(name: str, *, feature_version: int, data_hash: str | None, folder: Path,
            reads: tuple[str, ...] = (), cache: Path | None = None) -> bool:
    """Copy a cached build of `name` into `folder` if one was made from exactly these inputs;
    `reads`: the other artefacts in `folder` its fit learns from."""
    if data_hash is None:
        return False
    cache = cache or CACHE_DIR
    for entry in sorted((cache / name).glob("[!.]*/"), key=_age):
        try:
            card = artefacts.ModelCard.model_validate_json((entry / f"{name}.card.json").read_text("utf-8"))
            inputs = json.loads((entry / _INPUTS).read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if (card.feature_version, card.data_hash) != (feature_version, data_hash):
            continue
        if inputs != _inputs(folder, reads, files=inputs.get("files", {})):
            continue
        folder.mkdir(parents=True, exist_ok=True)  # a fresh clone has no artefacts folder yet
        for suffix in (".joblib", ".card.json"):
            shutil.copyfile(entry / f"{name}{suffix}", folder / f"{name}{suffix}")
        os.utime(entry)
        return True
    return False


def keep(name: str, folder: Path, reads: tuple[str, ...] = (), cache: Path | None = None) -> None:
    """Store the build just written to `folder`, with what it was made from. Call it in the process
    that trained, after the fit, when every module the fit used is loaded."""
    cache = cache or CACHE_DIR
    inputs = _inputs(folder, reads, files=None)
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    entry = cache / name / key
    staging = entry.with_name(f".{key}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for suffix in (".joblib", ".card.json"):
        shutil.copyfile(folder / f"{name}{suffix}", staging / f"{name}{suffix}")
    (staging / _INPUTS).write_text(json.dumps(inputs, sort_keys=True, indent=1), encoding="utf-8")
    shutil.rmtree(entry, ignore_errors=True)
    staging.rename(entry)  # whole or absent: a reader never sees half an entry
    for old in sorted((cache / name).glob("[!.]*/"), key=_age)[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def _inputs(folder: Path, reads: tuple[str, ...], files: dict[str, str] | None) -> dict:
    """What a build read. `files`: the paths to digest (a cached entry's); None: the source files
    loaded in this process and the data files beside them."""
    paths = list(files) if files is not None else _loaded_files()
    return {"files": {path: _digest(REPO_ROOT / path) for path in paths},
            "artefacts": {other: _card_key(folder / f"{other}.card.json") for other in sorted(reads)}}


def _card_key(card_path: Path) -> str:
    try:
        card = artefacts.ModelCard.model_validate_json(card_path.read_text("utf-8"))
    except (OSError, ValueError):
        return "missing"
    return f"v{card.feature_version}:{card.data_hash}"


def _loaded_files() -> list[str]:
    """The package's modules this process loaded, and the non-Python files in their folders
    (lexicons, patterns, prompts) that they may read."""
    found: set[Path] = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or not module.__name__.startswith(("app", "judges", "screening")):
            continue
        path = Path(file).resolve()
        if REPO_ROOT not in path.parents:
            continue
        found.add(path)
        found.update(p for p in path.parent.iterdir() if p.is_file() and p.suffix in {".yaml", ".json", ".md", ".txt"})
    return sorted(str(p.relative_to(REPO_ROOT)) for p in found)


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def _age(entry: Path) -> float:
    """Most recently used first."""
    try:
        return -entry.stat().st_mtime
    except OSError:
        return 0.0
