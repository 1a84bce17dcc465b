"""Learned models are built artefacts: fitted by `cafbot judges train` (`make train`), shipped in
the repository, loaded at run time, never trained there. Training is seeded, so `make train` on a
checkout rebuilds the same models and figures.

Each artefact is two files in the repository's artefacts/ folder: `NAME.joblib` (the fitted
model) and `NAME.card.json` (its model card: what it was trained on, how it did on a dev split
it never saw, its thresholds, when, and the model file's sha256). Loading verifies the checksum,
so a damaged or replaced file is never used. A data file edited after training makes the artefact stale: with
the training data at hand (a source checkout), start-up compares its hash with the card's and
stops with the command that fixes it, so a safety model never changes silently, or silently not.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import zlib
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import joblib

from app.core.config import REPO_ROOT
from app.core.errors import ConfigError
from app.core.learning import derived_cache
from app.core.records import Record

ARTEFACTS_DIR = REPO_ROOT / "artefacts"
RETRAIN = "run `make artefacts` (or `cafbot judges train --if-needed`)"


class ArtefactError(ConfigError):
    """A learned check's artefact is missing, unreadable or stale; names the file and the fix."""


class ModelCard(Record):
    name: str
    feature_version: int
    data_hash: str  # sha256 of the training files and the settings the fit read
    data_files: list[str]  # relative to the repository
    split_sizes: dict[str, int]
    dev_metrics: dict[str, Any]
    thresholds: dict[str, float]
    embedder: str = ""  # the sentence embedder its features were computed with ("" for none)
    trained_at: str = ""
    notes: str = ""
    sha256: str = ""  # of NAME.joblib as written


def data_hash(files: Iterable[Path], extra: Any = None) -> str:
    """The sha256 of the files' names and contents and of `extra`. Worked out once per version of
    the files (named by their sizes and modification times): reading every training file again
    took half a second of each start."""
    files = sorted(files)
    settings = json.dumps(extra, sort_keys=True, default=str)
    stamps = json.dumps([[str(p), (s := p.stat()).st_size, s.st_mtime_ns] for p in files])
    key = derived_cache.key_of(stamps.encode(), settings.encode())
    if isinstance(known := derived_cache.read("data-hash", key), str):
        return known
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update(settings.encode())
    derived_cache.write("data-hash", key, digest.hexdigest())
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# xz: about half the size of zlib for coefficient matrices at full precision. An artefact read at
# every start whose weights pack well otherwise (half precision) is stored FAST_TO_LOAD instead:
# Python's C unpickler over zlib. joblib's own unpickler is written in Python, and reading the input
# screen's 52k-word vocabularies through it took 2 s of every start; this way, 0.25 s.
SMALLEST = ("xz", 6)
FAST_TO_LOAD = ("zlib-pickle", 1)
_FAST_MAGIC = b"cafbot artefact: zlib-compressed pickle\n"


def save(name: str, model: Any, card: ModelCard, folder: Path = ARTEFACTS_DIR,
         compress: tuple[str, int] = SMALLEST) -> Path:
    card = card.model_copy(update={"trained_at": datetime.now(UTC).isoformat(timespec="seconds")})
    return write(name, model, card, folder, compress)


def write(name: str, model: Any, card: ModelCard, folder: Path = ARTEFACTS_DIR,
          compress: tuple[str, int] = SMALLEST) -> Path:
    """The model file and its card as given, the card's checksum that of the file written
    (`save` dates the card first; storing a fitted model anew keeps its date)."""
    folder.mkdir(parents=True, exist_ok=True)
    dump(model, folder / f"{name}.joblib", compress)
    card = card.model_copy(update={"sha256": file_sha256(folder / f"{name}.joblib")})
    (folder / f"{name}.card.json").write_text(card.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return folder / f"{name}.joblib"


def dump(model: Any, path: Path, compress: tuple[str, int] = SMALLEST) -> None:
    if compress == FAST_TO_LOAD:
        path.write_bytes(_FAST_MAGIC + zlib.compress(pickle.dumps(model, protocol=5), compress[1]))
    else:
        joblib.dump(model, path, compress=compress)


def read(path: Path) -> Any:
    """A model file in either format (`dump`): the format is told by the file's first bytes."""
    return _loads(path.read_bytes())


def _loads(data: bytes) -> Any:
    if data.startswith(_FAST_MAGIC):
        return pickle.loads(zlib.decompress(data[len(_FAST_MAGIC):]))
    return joblib.load(io.BytesIO(data))


def load(name: str, *, feature_version: int, current_hash: str | None,
         folder: Path = ARTEFACTS_DIR) -> tuple[Any, ModelCard]:
    """The model and its card. `current_hash`: the hash of the training data as it is now, or None
    when the data is not here to compare (an installed wheel ships the artefact, not the data)."""
    model_path = folder / f"{name}.joblib"
    data = model_path.read_bytes() if model_path.is_file() else None  # read once: checked, then loaded
    card, problem = _inspect(name, feature_version=feature_version, current_hash=current_hash, folder=folder,
                             data=data)
    if card is None or problem or data is None:
        raise ArtefactError(f"{model_path}: {problem}; {RETRAIN}")
    try:
        model = _loads(data)
    except Exception as error:  # any unreadable artefact is the same problem with the same fix
        raise ArtefactError(f"{model_path}: cannot load the learned check {name!r} ({error}); {RETRAIN}") from error
    return model, card


def why_retrain(name: str, *, feature_version: int, current_hash: str | None,
                folder: Path = ARTEFACTS_DIR) -> str | None:
    """Why the artefact cannot be used as it is (missing, unreadable card, built for other features,
    trained on other data), or None; read from its card alone, so asking is cheap."""
    return _inspect(name, feature_version=feature_version, current_hash=current_hash, folder=folder)[1]


def _inspect(name: str, *, feature_version: int, current_hash: str | None,
             folder: Path, data: bytes | None = None) -> tuple[ModelCard | None, str | None]:
    """The artefact's card, read once, and why it cannot be used (None: it can); `data`: the model
    file's bytes when already read."""
    model_path, card_path = folder / f"{name}.joblib", folder / f"{name}.card.json"
    if not model_path.is_file() or not card_path.is_file():
        return None, f"the learned check {name!r} is not built yet"
    try:
        card = ModelCard.model_validate_json(card_path.read_text(encoding="utf-8"))
    except Exception as error:
        return None, f"its model card is unreadable ({error})"
    if card.feature_version != feature_version:
        return card, f"built for features v{card.feature_version}, the code reads v{feature_version}"
    if card.sha256 != (hashlib.sha256(data).hexdigest() if data is not None else file_sha256(model_path)):
        return card, "its model file's checksum differs from its card's: damaged, or not the file trained"
    if current_hash is not None and current_hash != card.data_hash:
        folders = sorted({str(Path(f).parent) for f in card.data_files})
        return card, f"stale, its training data ({', '.join(folders)}) changed after it was trained"
    return card, None
