"""all-MiniLM-L6-v2 run by onnxruntime: the vectors sentence-transformers gives (within 1e-6),
without importing torch, which takes most of a short command's start (about 7 of `cafbot ask`'s
seconds warm, three times that cold).

The ONNX file is exported from the shipped weights once per machine, into the cache dir; only
that export imports torch (and onnx). A process that cannot export it keeps sentence-transformers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import warnings
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def exported(model_path: Path, cache_dir: Path) -> Path | None:
    """The model's ONNX file in `cache_dir`, exported now if missing; None when it cannot be."""
    weights = model_path / "model.safetensors"
    try:
        digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:12]
    except OSError:
        return None
    path = cache_dir / "onnx" / f"all-MiniLM-L6-v2-{digest}.onnx"
    if path.is_file():
        return path
    try:
        _export(model_path, path)
    except Exception as error:  # no onnx package, an exporter change: the torch path still works
        log.warning("cannot export the sentence embedder to ONNX (%s); using sentence-transformers", error)
        return None
    return path


def _export(model_path: Path, path: Path) -> None:
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Loading weights" bar on a first start
    model = AutoModel.from_pretrained(str(model_path)).eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    example = torch.ones((2, 8), dtype=torch.long)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")  # another process may export at once
    with warnings.catch_warnings():  # the exporter's notes on operators; the tests compare the vectors
        warnings.simplefilter("ignore")
        torch.onnx.export(LastHiddenState(), (example, example, torch.zeros_like(example)), str(partial),
                          input_names=list(_INPUTS), output_names=["last_hidden_state"], opset_version=17,
                          dynamic_axes={name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")},
                          dynamo=False)
    os.replace(partial, path)


class OnnxMiniLM:
    """Tokenise, run, mean-pool over the real tokens, L2-normalise: what sentence-transformers
    does for this model."""

    def __init__(self, model_path: Path, onnx_path: Path):
        from tokenizers import Tokenizer

        config = json.loads((model_path / "sentence_bert_config.json").read_text(encoding="utf-8"))
        self.tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=int(config.get("max_seq_length", 256)))
        self.tokenizer.no_padding()
        self._path = onnx_path
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()

    def _session(self, threads: int):
        with self._lock:
            if threads not in self._sessions:
                import onnxruntime

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                self._sessions[threads] = onnxruntime.InferenceSession(
                    str(self._path), options, providers=["CPUExecutionProvider"])
            return self._sessions[threads]

    def encode(self, texts: list[str], batch_size: int, threads: int) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")  # little padding per batch
        vectors = np.empty((len(texts), 0), dtype=np.float32)
        session = self._session(threads)
        for start in range(0, len(texts), batch_size):
            rows = order[start:start + batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for n, i in enumerate(rows):
                ids[n, :len(encodings[i].ids)] = encodings[i].ids
                mask[n, :len(encodings[i].ids)] = 1
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            if vectors.shape[1] == 0:
                vectors = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            vectors[rows] = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return vectors

    def vocab(self) -> dict[str, int]:
        return self.tokenizer.get_vocab()
