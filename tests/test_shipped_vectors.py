"""The default knowledge base's shipped chunk vectors: current, used only by an embedder that
computes the same ones, and the very vectors a first start would compute."""

from __future__ import annotations

import numpy as np
import pytest

from app.core.embeddings import MODEL_NAME
from app.kb import load_knowledge_base
from app.retrieval import index as index_module
from app.retrieval.index import ChunkIndex
from app.retrieval.shipped_vectors import (
    SHIPPED_DIR,
    default_chunk_texts,
    shipped_vectors,
    vectors_key,
    write_vectors,
)
from tests.fakes import HashingEmbedder
from tests.test_retrieval_index import settings_for, small_kb

TEXTS = ["Sleep problems: poor sleep can be an early sign.", "Clozapine needs blood tests.",
         "Voices: humming helps some people.", "Sleep problems: poor sleep can be an early sign."]


class OtherKernel(HashingEmbedder):
    """The same model name, vectors a rounding apart: what another CPU or runner gives."""

    def encode(self, texts, batch_size=64, *, cache=None):
        return super().encode(texts, batch_size, cache=cache) * np.float32(1 + 1e-6)


def test_the_shipped_vectors_are_those_of_the_default_knowledge_base():
    key = vectors_key(default_chunk_texts(), MODEL_NAME)
    assert [p.name for p in SHIPPED_DIR.glob("chunk-vectors-*.npz")] == [f"chunk-vectors-{key}.npz"], \
        "the default knowledge base's chunks changed: run `make train`"


def test_the_vectors_written_are_found_by_text(tmp_path):
    embedder = HashingEmbedder()
    write_vectors(embedder, TEXTS, 2, tmp_path)
    found = shipped_vectors(embedder, [*TEXTS[:2], "a text no file holds"], tmp_path)
    assert list(found) == TEXTS[:2]
    for text in TEXTS[:2]:
        assert np.array_equal(found[text], embedder.encode([text])[0])


def test_they_are_made_in_the_batches_the_index_embeds_in(tmp_path):
    seen: list[list[str]] = []

    class Recording(HashingEmbedder):
        def encode(self, texts, batch_size=64, *, cache=None):
            seen.append(list(texts))
            return super().encode(texts, batch_size, cache=cache)

    write_vectors(Recording(), TEXTS, 3, tmp_path)
    assert seen[:2] == [TEXTS[:3], TEXTS[3:]]  # then the probes


def test_another_embedder_embeds_for_itself(tmp_path):
    write_vectors(HashingEmbedder(), TEXTS, 2, tmp_path)
    assert shipped_vectors(OtherKernel(), TEXTS, tmp_path) == {}
    renamed = HashingEmbedder()
    renamed.name = "another-model"
    assert shipped_vectors(renamed, TEXTS, tmp_path) == {}
    assert shipped_vectors(HashingEmbedder(), TEXTS, tmp_path / "none shipped") == {}


def test_another_knowledge_base_costs_no_probe(tmp_path):
    write_vectors(HashingEmbedder(), TEXTS, 2, tmp_path)
    embedder = HashingEmbedder()
    assert shipped_vectors(embedder, ["a chunk of another knowledge base"], tmp_path) == {}
    assert embedder.calls == 0


def test_the_index_embeds_only_what_is_not_shipped(tmp_path, monkeypatch):
    kb = load_knowledge_base(small_kb(tmp_path / "kb"))
    settings = settings_for(tmp_path, kb.path)
    fresh = ChunkIndex(kb, settings, embedder=HashingEmbedder())
    texts = [c.text for c in fresh.wanted]
    write_vectors(HashingEmbedder(), texts[1:], 256, tmp_path / "shipped")
    monkeypatch.setattr(index_module, "shipped_vectors",
                        lambda embedder, wanted: shipped_vectors(embedder, wanted, tmp_path / "shipped"))
    embedded: list[str] = []

    class Counting(HashingEmbedder):
        def encode_known(self, texts):
            embedded.extend(texts)
            return super().encode_known(texts)

    index = ChunkIndex(kb, settings_for(tmp_path / "second", kb.path), embedder=Counting())
    assert index.sync().embedded_chunks == len(texts)
    assert embedded == texts[:1]
    stored = index.collection.get(include=["embeddings"])
    text_of = {c.id: c.text for c in index.wanted}
    expected = HashingEmbedder().encode([text_of[cid] for cid in stored["ids"]])
    assert np.allclose(np.asarray(stored["embeddings"]), expected, atol=1e-6)


def test_the_probes_are_as_long_as_the_chunks_they_vouch_for():
    """A CPU's kernels can agree on a short sentence and differ on a chunk: probes of one sentence
    matched to the last bit on a machine where every chunk came out 1e-7 apart."""
    from app.core.embeddings import _CACHEABLE_BATCH
    from app.retrieval.shipped_vectors import _PROBES

    probe_lengths, chunk_lengths = sorted(map(len, _PROBES)), sorted(map(len, default_chunk_texts()))
    assert len(_PROBES) > _CACHEABLE_BATCH  # more than encode runs on one thread: the chunks' path
    assert probe_lengths[0] <= chunk_lengths[0] and probe_lengths[-1] >= chunk_lengths[-1]


@pytest.mark.slow
def test_they_are_what_the_embedder_computes_on_a_first_start(embedder, tmp_path):
    from app.core.embeddings import Embedder

    texts = default_chunk_texts()
    shipped = shipped_vectors(embedder, texts)
    assert set(shipped) == set(texts), "no shipped vectors for this embedder: run `make train`"
    fresh = Embedder(cache_dir=tmp_path)  # nothing cached: every chunk computed, as on a first start
    computed = np.concatenate([fresh.encode_known(texts[start: start + index_module.EMBED_BATCH])
                               for start in range(0, len(texts), index_module.EMBED_BATCH)])
    assert all(np.array_equal(shipped[text], computed[n]) for n, text in enumerate(texts))
