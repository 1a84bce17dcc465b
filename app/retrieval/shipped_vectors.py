"""The default knowledge base's chunk vectors, shipped so that a first start does not embed them.

Embedding its few hundred chunks was most of what a first start spent on the index. `make train`
writes the vectors (`ship_default_vectors`) beside the example-message fit, computed as the index
computes them on a first start: in the same batches, so that they are the very same floats. A test
fails when they no longer match the default knowledge base's chunks.

They are used only by an embedder that computes what they were made with: the file keeps a few
probe sentences' vectors, and an embedder that gives others (another runner, model version or CPU
kernel) embeds the chunks itself. A chunk whose text changed is not in the file and is embedded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from app.core.embeddings import Embedder

SHIPPED_DIR = Path(__file__).with_name("fitted")
# More texts than `Embedder.encode` runs on one thread (16), so the probes take the multi-threaded
# path the chunks take, and as long as chunks: a CPU's kernels can agree on short texts and differ
# on long ones (seen: probes of one sentence equal to the last bit, every chunk 1e-7 apart).
_PROBES = tuple(f"Probe {n}:" + " What are the early warning signs of relapse?" * (n + 1) for n in range(20))


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def vectors_key(texts: Sequence[str], model_name: str) -> str:
    """What a shipped file holds: the same texts for the same model, the same key."""
    return hashlib.sha256(json.dumps([model_name, sorted(map(text_key, texts))]).encode()).hexdigest()[:16]


def shipped_path(texts: Sequence[str], model_name: str, directory: Path = SHIPPED_DIR) -> Path:
    return directory / f"chunk-vectors-{vectors_key(texts, model_name)}.npz"


def shipped_vectors(embedder: Embedder, texts: Sequence[str], directory: Path = SHIPPED_DIR) -> dict[str, np.ndarray]:
    """The shipped vectors of those of `texts` a shipped file holds, if this embedder computes the
    same ones; {} otherwise."""
    files = sorted(directory.glob("chunk-vectors-*.npz"))
    if not files or not texts:
        return {}
    with np.load(files[0], allow_pickle=False) as shipped:
        if str(shipped["model"]) != embedder.name:
            return {}
        row = {str(key): n for n, key in enumerate(shipped["keys"])}
        found = {text: row[key] for text in texts if (key := text_key(text)) in row}
        # Another knowledge base's chunks are not there: no need to run the probes for it.
        if not found or not np.array_equal(embedder.encode(list(_PROBES), cache=False), shipped["probes"]):
            return {}
        vectors = shipped["vectors"]
        return {text: vectors[n] for text, n in found.items()}


def write_vectors(embedder: Embedder, texts: Sequence[str], batch: int, directory: Path) -> Path:
    """Embed `texts` as the index does on a first start (batches of `batch`, each text once, a
    text met again keeping its first vector) and write them, with the probes, where they ship; any
    older file there is removed."""
    found: dict[str, np.ndarray] = {}
    for start in range(0, len(texts), batch):
        part = list(dict.fromkeys(texts[start: start + batch]))
        for text, vector in zip(part, embedder.encode(part, cache=False), strict=True):
            found.setdefault(text, vector)
    for old in directory.glob("chunk-vectors-*.npz"):
        old.unlink()
    directory.mkdir(parents=True, exist_ok=True)
    path = shipped_path(list(found), embedder.name, directory)
    with path.open("wb") as out:  # np.savez adds ".npz" to a name; a file object it keeps as is
        np.savez_compressed(out, model=np.array(embedder.name), keys=np.array([text_key(t) for t in found]),
                            vectors=np.array(list(found.values()), dtype=np.float32).reshape(len(found), -1),
                            probes=embedder.encode(list(_PROBES), cache=False))
    return path


def ship_default_vectors() -> Path:
    """The default deployment's chunk vectors, written where they ship (`make train`)."""
    from app.retrieval.index import EMBED_BATCH

    return write_vectors(Embedder(), default_chunk_texts(), EMBED_BATCH, SHIPPED_DIR)


def default_chunk_texts() -> list[str]:
    """The default knowledge base's chunks, as the index cuts them with the default settings."""
    from app.core.config import DEFAULT_KNOWLEDGE_BASE
    from app.core.config_sections import Retrieval
    from app.kb.loader import load_knowledge_base
    from app.retrieval.chunking import knowledge_base_chunks

    retrieval = Retrieval()
    return [c.text for c in knowledge_base_chunks(load_knowledge_base(DEFAULT_KNOWLEDGE_BASE),
                                                  retrieval.chunk_words, retrieval.chunk_overlap_words)]
