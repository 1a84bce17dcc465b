"""Chunking, fusion, embeddings and the Chroma + BM25 index (real model, real Chroma in tmp_path)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from app.core.config import Settings
from app.core.errors import ConfigError
from app.kb import load_knowledge_base
from app.kb.schema import Source
from app.retrieval.chroma_store import chroma_client, collection_name
from app.retrieval.chunking import chunk_source, source_fingerprint, windows
from app.retrieval.fusion import by_source, ranked, rrf
from app.retrieval.index import ChunkIndex
from tests.conftest import REPO

TOPICS = {
    "A01": ("Sleep problems", "Why sleep goes wrong and how to sleep better.", ["sleep", "insomnia"],
            "## Why sleep changes\n\nPoor sleep can be an early sign of becoming unwell. Some medicines "
            "make you drowsy.\n\n## Better sleep habits\n\nKeep a regular bedtime, avoid caffeine in the "
            "evening and put screens away an hour before bed."),
    "A02": ("Clozapine blood tests", "Why clozapine needs regular blood tests.", ["clozapine", "blood tests"],
            "Clozapine can lower the number of white blood cells that fight infection. Blood tests are "
            "weekly at first and less often later. Report a fever or sore throat straight away."),
    "A03": ("Coping with voices", "Practical ways to cope with hearing voices.", ["voices", "hallucinations"],
            "Many people who hear voices find distraction helps: humming, music through headphones, or "
            "talking to someone they trust. Hearing voices groups offer support from peers."),
    "A04": ("Returning to work", "Going back to a job or study after being unwell.", ["work", "employment"],
            "Supported employment helps people find and keep a job. You can ask your employer for "
            "reasonable adjustments such as part-time hours. Telling them about the illness is your choice."),
    "A05": ("Healthy eating", "Food, appetite and weight while taking medicines.", ["diet", "weight"],
            "Some medicines increase appetite and weight. Eating vegetables, drinking water instead of "
            "sugary drinks and regular meals can help keep weight steady."),
}


def write_source(folder: Path, sid: str, title: str, summary: str, keywords: list[str], body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.md"
    path.write_text(f"---\nid: {sid}\ntitle: {title}\nsummary: {summary}\nkeywords: {keywords}\n---\n"
                    f"# {title}\n\n{body}\n", encoding="utf-8")
    return path


def small_kb(folder: Path) -> Path:
    for sid, (title, summary, keywords, body) in TOPICS.items():
        write_source(folder, sid, title, summary, keywords, body)
    return folder


def settings_for(tmp_path: Path, kb: Path, **retrieval) -> Settings:
    return Settings(knowledge_base=kb, data_dir=tmp_path / "data", retrieval=retrieval)


def open_index(settings: Settings, embedder) -> ChunkIndex:
    return ChunkIndex(load_knowledge_base(settings.knowledge_base), settings, embedder=embedder)


# -- pure functions ---------------------------------------------------------------------------
def test_rrf_adds_reciprocal_ranks():
    scores = rrf([["a", "b", "c"], ["b", "a"]], k=60)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63)
    weighted = rrf([["a"], ["b"]], k=1, weights=[1.0, 0.5])
    assert weighted == {"a": 0.5, "b": 0.25}


def test_by_source_takes_best_chunk_plus_decaying_share():
    scores = {"x#1": 0.5, "x#2": 0.4, "x#3": 0.3, "y#1": 0.6}
    source_of = {"x#1": "X", "x#2": "X", "x#3": "X", "y#1": "Y"}
    folded = by_source(scores, source_of, top_n=2, decay=0.5)
    assert folded["X"] == pytest.approx(0.5 + 0.5 * 0.4)
    assert folded["Y"] == pytest.approx(0.6)
    assert by_source(scores, source_of, top_n=1)["X"] == pytest.approx(0.5)
    assert ranked(folded)[0][0] == "X"
    assert ranked({"b": 1.0, "a": 1.0}) == [("a", 1.0), ("b", 1.0)]  # ties: by id


def test_windows_overlap_and_merge_short_tail():
    words = [str(i) for i in range(100)]
    parts = windows(words, 40, 10)
    assert parts[0] == words[:40] and parts[1][:10] == words[30:40]
    assert parts[-1][-1] == "99"
    assert all(len(p) >= 40 // 3 for p in parts)
    assert windows(words[:30], 40, 10) == [words[:30]]


def test_chunks_card_first_then_sections_with_headings():
    title, summary, keywords, body = TOPICS["A01"]
    source = Source(id="A01", title=title, summary=summary, keywords=keywords, body=f"# {title}\n\n{body}")
    chunks = chunk_source(source, chunk_words=20, overlap_words=5)
    assert chunks[0].kind == "card" and "insomnia" in chunks[0].text and summary in chunks[0].text
    assert {c.source_id for c in chunks} == {"A01"}
    assert len({c.id for c in chunks}) == len(chunks)
    assert any(c.text.startswith("Sleep problems - Better sleep habits:") for c in chunks)
    assert not any("##" in c.text or "**" in c.text for c in chunks)
    assert source_fingerprint(source, 20, 5) != source_fingerprint(source, 30, 5)
    assert source_fingerprint(source, 20, 5) == source_fingerprint(source.model_copy(), 20, 5)


def test_chroma_url_must_be_http(tmp_path):
    with pytest.raises(ConfigError, match="chroma_url"):
        chroma_client(Settings(data_dir=tmp_path, retrieval={"chroma_url": "ftp://x"}))


def test_collection_names_differ_by_knowledge_base_path(tmp_path):
    assert collection_name(tmp_path / "a") != collection_name(tmp_path / "b")
    assert collection_name(tmp_path / "a") == collection_name(tmp_path / "a")


def test_the_default_relative_data_dir_in_two_working_directories_gives_two_indexes(tmp_path, monkeypatch):
    # Chroma caches a client per path string; ".cafbot/index" must not alias another folder's index
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    monkeypatch.chdir(tmp_path / "one")
    chroma_client(Settings()).get_or_create_collection("only-in-one")
    monkeypatch.chdir(tmp_path / "two")
    names = {getattr(c, "name", c) for c in chroma_client(Settings()).list_collections()}
    assert "only-in-one" not in names
    assert (tmp_path / "two" / ".cafbot" / "index").is_dir()


# -- with the model and Chroma ----------------------------------------------------------------
@pytest.mark.slow
def test_embedder_normalised_cached_and_thread_safe(embedder):
    texts = ["clozapine blood tests", "how to sleep better", "going back to work"]
    vectors = embedder.encode(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(embedder.encode(texts[:1])[0], embedder.encode(texts[:1])[0])
    similarity = embedder.similarity(["white blood cell checks"], texts)
    assert similarity.argmax() == 0

    results: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, embedder.encode([f"{texts[i % 3]} {i}"])))
               for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, vector in results.items():
        assert np.allclose(vector, embedder.encode([f"{texts[i % 3]} {i}"]), atol=1e-5)


@pytest.mark.slow
def test_index_rebuilds_only_what_changed(tmp_path, monkeypatch, embedder):
    import app.retrieval.index as index_module

    monkeypatch.setattr(index_module, "_PAGE", 4)  # stored metadata is read in pages: exercise it
    kb = small_kb(tmp_path / "kb")
    settings = settings_for(tmp_path, kb)

    index = open_index(settings, embedder)
    first = index.sync()
    assert first.added == sorted(TOPICS) and first.embedded_chunks == len(index.chunks)
    assert index.collection.count() == len(index.chunks)
    before = index.collection.get(ids=["A01#0"], include=["embeddings"])["embeddings"][0]

    again = open_index(settings, embedder).sync()
    assert (again.unchanged, again.embedded_chunks, again.added, again.updated) == (5, 0, [], [])

    title, summary, keywords, body = TOPICS["A03"]
    write_source(kb, "A03", title, summary, keywords, body + " Writing the voices down in a diary helps some.")
    (kb / "A05.md").unlink()
    write_source(kb, "A06", "Stopping smoking", "Help to stop smoking.", ["smoking"], "Nicotine patches help.")
    index = open_index(settings, embedder)
    changed = index.sync()
    assert changed.updated == ["A03"] and changed.removed == ["A05"] and changed.added == ["A06"]
    assert changed.unchanged == 3
    assert changed.embedded_chunks == sum(c.source_id in {"A03", "A06"} for c in index.chunks)
    stored = index.collection.get(include=["metadatas"])
    assert {m["source_id"] for m in stored["metadatas"]} == {"A01", "A02", "A03", "A04", "A06"}
    assert index.collection.count() == len(index.chunks)
    after = index.collection.get(ids=["A01#0"], include=["embeddings"])["embeddings"][0]
    assert np.array_equal(before, after)  # untouched sources keep their stored vectors

    # An interrupted build (a chunk missing) is repaired on the next open.
    index.collection.delete(ids=["A02#1"])
    assert open_index(settings, embedder).sync().updated == ["A02"]
    # Chunking settings are part of the fingerprint: changing them re-embeds everything.
    resized = open_index(settings_for(tmp_path, kb, chunk_words=25, chunk_overlap_words=5), embedder).sync()
    assert len(resized.updated) == 5 and resized.unchanged == 0


@pytest.mark.slow
def test_two_knowledge_bases_share_a_data_dir_without_colliding(tmp_path, embedder):
    one = small_kb(tmp_path / "one")
    two = tmp_path / "two"
    write_source(two, "B01", "Other", "Something else.", ["other"], "Entirely different content here.")
    first, second = open_index(settings_for(tmp_path, one), embedder), open_index(settings_for(tmp_path, two), embedder)
    first.sync()
    second.sync()
    assert first.collection.name != second.collection.name
    assert second.collection.count() == len(second.chunks)
    assert open_index(settings_for(tmp_path, one), embedder).sync().unchanged == len(TOPICS)


@pytest.mark.slow
def test_dense_and_lexical_search_find_the_right_chunks(tmp_path, embedder):
    index = open_index(settings_for(tmp_path, small_kb(tmp_path / "kb")), embedder)
    index.sync()
    hits = index.dense(index.embedder.encode(["how often are clozapine blood checks", "can't sleep"]), 5)
    assert index.source_of[hits[0][0][0]] == "A02" and index.source_of[hits[1][0][0]] == "A01"
    assert hits[0][0][1] >= hits[0][-1][1]  # best first
    lexical = index.lexical("reasonable adjustments from my employer", 5)
    assert index.source_of[lexical[0][0]] == "A04"
    assert index.lexical("zzzz qqqq", 5) == []


class _Remembering:
    """The real embedder, each text embedded once: rebuilding an index then costs only Chroma."""

    def __init__(self, embedder):
        self.inner, self.name, self.dimensions = embedder, embedder.name, embedder.dimensions
        self.vectors: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str], batch_size: int = 64, *, cache: bool | None = None) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.inner.encode(missing), strict=True))
        return np.stack([self.vectors[t] for t in texts])

    def encode_known(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)


@pytest.mark.slow
def test_dense_search_finds_a_questions_true_nearest_chunks_in_every_build(tmp_path, embedder, knowledge_base):
    """HNSW is approximate and built on several threads, so every build is a different graph; with
    Chroma's default search breadth about one build in ten misses a question's nearest chunk, and
    with it a source the question clearly names."""
    import json

    questions = [json.loads(line)["question"] for line in (REPO / "scenarios" / "retrieval" / "questions.jsonl")
                 .read_text(encoding="utf-8").splitlines() if line.strip()]
    remembering = _Remembering(embedder)
    asked = remembering.encode(questions)
    n = Settings().retrieval.dense_candidates
    for build in range(6):
        index = ChunkIndex(knowledge_base, Settings(data_dir=tmp_path / f"build-{build}"), embedder=remembering)
        index.sync()
        stored = remembering.encode([c.text for c in index.chunks])
        nearest = [{index.chunks[i].id for i in np.argsort(-(stored @ q))[:n]} for q in asked]
        found = [{cid for cid, _ in hits} for hits in index.dense(asked, n)]
        missed = [q for q, want, got in zip(questions, nearest, found, strict=True) if want != got]
        assert not missed, f"build {build}: {len(missed)} questions missed a nearest chunk, e.g. {missed[0]!r}"


def test_an_index_built_before_the_search_breadth_was_raised_is_searched_with_it(tmp_path):
    from app.retrieval.index import _EF_SEARCH
    from tests.fakes import HashingEmbedder

    kb = small_kb(tmp_path / "kb")
    settings = settings_for(tmp_path, kb)
    chroma_client(settings).get_or_create_collection(collection_name(kb), embedding_function=None,
                                                     configuration={"hnsw": {"space": "cosine"}})
    index = open_index(settings, HashingEmbedder())
    assert index.collection.configuration["hnsw"]["ef_search"] == _EF_SEARCH
    reopened = chroma_client(settings).get_collection(collection_name(kb))
    assert reopened.configuration["hnsw"]["ef_search"] == _EF_SEARCH  # stored, not only in this process


_OPEN_AT = """
import sys, time
from pathlib import Path
from app.core.config import Settings
from app.core.embeddings import Embedder
from app.retrieval import open_identifier
kb, data, start = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
embedder = Embedder()
# All open the empty index at the same moment. Spinning, not sleeping: after a sleep they wake too
# unevenly to collide (without the lock that version passed 3 runs of 3; this one fails about half).
while time.time() < start:
    pass
print(len(open_identifier(Settings(knowledge_base=kb, data_dir=data), embedder).index.chunks))
"""


@pytest.mark.slow
def test_processes_opening_a_new_data_dir_at_once_all_get_the_index(tmp_path):
    """cafbot processes started together on a fresh machine (the app and a CLI command, or
    evaluations run side by side) all get the index: the first builds it, the others wait."""
    import subprocess
    import sys
    import time

    kb = small_kb(tmp_path / "kb")
    start = str(time.time() + 25)
    runs = [subprocess.Popen([sys.executable, "-c", _OPEN_AT, str(kb), str(tmp_path / "data"), start],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(3)]
    results = [run.communicate(timeout=180) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err[-400:] for _, err in results]
    assert [out.split()[-1] for out, _ in results] == [out.split()[-1] for out, _ in results[:1]] * 3
