"""The chunk index: dense vectors in Chroma, BM25 in memory, both over the same chunks.

Chroma keeps, with every chunk, a fingerprint of its source (text, metadata, chunking and model
settings). Opening the index compares fingerprints and re-embeds only the sources that were added
or changed, and drops the chunks of removed ones; everything else is reused from disk. BM25 is
rebuilt in memory on every open, because for a knowledge base it takes milliseconds.

Several processes read one index: an app's replicas on one Chroma server, or the app and the CLI
on one data dir. So `cafbot kb index --rebuild` never touches the collection they read: it builds
a new generation (a collection of its own) and, once it is complete, switches a pointer to it.
Readers look at the pointer when a turn starts and move over (see `ChunkIndex.follow_pointer`);
`rebuild_index` says when an old generation is dropped.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

import numpy as np
from pydantic import BaseModel
from tqdm import tqdm

from app.core.config import Settings
from app.core.embeddings import Embedder
from app.core.errors import CafbotError
from app.kb.loader import KnowledgeBase
from app.retrieval.chroma_store import (
    REBUILD_COMMAND,
    IndexDamaged,
    chroma_client,
    collection_name,
    index_building,
    reading_index,
    while_locked,
)
from app.retrieval.chunking import Chunk, knowledge_base_chunks, source_fingerprint
from app.retrieval.generations import (
    Pointer,
    current_generation,
    generations_of,
    is_gone,
    named_by,
    new_generation_name,
    read_pointer,
    write_pointer,
)
from app.retrieval.shipped_vectors import shipped_vectors

log = logging.getLogger(__name__)

_TOKEN = re.compile(r"[a-z0-9]+")
EMBED_BATCH = 256  # chunks per `encode_known` call (shipped vectors are made in the same batches)
_PAGE = 5000
# HNSW is approximate and Chroma builds it on several threads, so each build is a different graph.
# With the default 100 candidates a search now and then missed a question's nearest chunk (3 builds
# in 30 of the default knowledge base; one missed chunk turned a clear source into "not covered").
# A knowledge base's few thousand chunks are searched all but exhaustively with 1000, in about a
# millisecond.
_EF_SEARCH = 1000
_EF_CONSTRUCTION = 200


class IndexSync(BaseModel):
    """What opening the index had to do."""

    added: list[str] = []
    updated: list[str] = []
    removed: list[str] = []
    unchanged: int = 0
    chunks: int = 0
    embedded_chunks: int = 0
    seconds: float = 0.0



class Rebuilt(NamedTuple):
    generation: str
    replaced: str  # the generation readers used until now, kept; "" if none
    dropped: list[str]
    report: IndexSync

    def summary(self, kb_path: Path) -> str:
        kept = f"; {self.replaced} is kept for readers still on it" if self.replaced else ""
        dropped = f"; dropped {', '.join(self.dropped)}" if self.dropped else ""
        return (f"Rebuilt the index of {kb_path} as {self.generation}: readers move to it at their "
                f"next turn{kept}{dropped}.")


def rebuild_index(kb: KnowledgeBase, settings: Settings, embedder: Embedder, *,
                  show_progress: bool = False) -> Rebuilt:
    """Build the knowledge base's index from scratch as a new generation and, once it is complete,
    switch the pointer to it; readers go on with the generation they have until their next turn.

    Then the generations older than the one it replaced are dropped, and that one is kept until the
    next rebuild. Every reader that has started a turn since the last switch reads the replaced
    generation or the new one, and a turn that began before this switch finishes on the replaced
    one; an older generation is still held only by a reader idle since before the last switch,
    which moves to the new one when its next turn starts (or, searching first, finds its
    generation gone and does the same). Dropping by rebuild rather than after a grace period keeps
    exactly one spare copy, however far apart rebuilds are. A newer generation (another rebuild
    still running) is never dropped."""
    with index_building(settings):
        index = ChunkIndex(kb, settings, embedder=embedder, generation=new_generation_name(kb.path))
        try:
            report = index.sync(show_progress=show_progress)
        except BaseException:
            with suppress(Exception):  # an incomplete generation is never read: don't keep it
                index.client.delete_collection(index.collection.name)
            raise
        pointer = index.published
        assert pointer is not None, "sync publishes a new generation"
        with reading_index(settings):
            generations = generations_of(index.client, kb.path)
        older = generations[: generations.index(pointer.generation)] if pointer.generation in generations else []
        dropped: list[str] = []
        for name in (name for name in older if name != pointer.previous):
            try:
                while_locked(lambda name=name: index.client.delete_collection(name))
                dropped.append(name)
            except Exception as error:  # the new generation is in use already: say so, go on
                if not is_gone(error):  # (gone: another rebuild dropped it first)
                    log.warning("could not drop the old index generation %s (%s); the next rebuild "
                                "drops it", name, error)
    return Rebuilt(pointer.generation, pointer.previous, dropped, report)



class Tokenizer:
    """Lower-case words, English stop words removed, Snowball-stemmed: 'relapses' finds 'relapse'."""

    def __init__(self) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        self._stem = Stemmer.Stemmer("english").stemWords
        self._stop = frozenset(STOPWORDS_EN_PLUS)  # NLTK's list: what, how, my, ... go too

    def __call__(self, text: str) -> list[str]:
        return self._stem([t for t in _TOKEN.findall(text.lower()) if t not in self._stop])


def _ef_search(collection) -> int:
    hnsw = (collection.configuration or {}).get("hnsw") or {}
    return int(hnsw.get("ef_search") or 0)


def _search_broadly(collection) -> None:
    if _ef_search(collection) < _EF_SEARCH:  # an index built before it was raised
        while_locked(lambda: collection.modify(configuration={"hnsw": {"ef_search": _EF_SEARCH}}))


def _stored(collection, include: list[str]) -> Iterator[tuple[str, str | None, dict]]:
    """Every stored chunk's id, text (if included) and metadata, a page at a time: one `get` of a
    100k-chunk collection exceeds SQLite's limit on query variables."""
    offset = 0
    while True:
        page = collection.get(include=include, limit=_PAGE, offset=offset)
        if not page["ids"]:
            return
        texts = page.get("documents") or [None] * len(page["ids"])
        yield from zip(page["ids"], texts, page["metadatas"] or [{}] * len(page["ids"]), strict=True)
        offset += len(page["ids"])


class ChunkIndex:
    def __init__(self, kb: KnowledgeBase, settings: Settings, *, embedder: Embedder, client=None,
                 generation: str | None = None):
        """Opens the generation the pointer names (or, with none, creates the first one, which
        `sync` fills); with `generation`, creates a new generation of that name to build."""
        self.settings = settings
        self.embedder = embedder
        self.kb_path = kb.path
        retrieval = settings.retrieval
        # What the knowledge base holds: what `sync` stores. `chunks` are those searched, the same
        # until a rebuild elsewhere switches this index to a generation built from other files.
        self.wanted: list[Chunk] = knowledge_base_chunks(kb, retrieval.chunk_words, retrieval.chunk_overlap_words)
        self._fingerprints = {s.id: source_fingerprint(s, self.embedder.name, retrieval.chunk_words,
                                                       retrieval.chunk_overlap_words) for s in kb}
        self.tokenize = Tokenizer()
        self._switching = threading.Lock()
        self._new = generation is not None
        self.published: Pointer | None = None  # the pointer `sync` wrote, if it wrote one
        with reading_index(settings):
            self.client = client or chroma_client(settings)
            self._pointer_at_open = None if self._new else read_pointer(self.client, kb.path)
            found = None if self._new else named_by(self.client, kb.path, self._pointer_at_open)
            self.collection = found or self.client.get_or_create_collection(
                generation or collection_name(kb.path), embedding_function=None,
                configuration={"hnsw": {"space": "cosine", "ef_search": _EF_SEARCH,
                                        "ef_construction": _EF_CONSTRUCTION}},
                metadata={"knowledge_base": str(kb.path.resolve())[-500:], "model": self.embedder.name},
            )
            _search_broadly(self.collection)
        self._build_bm25(self.wanted)

    # -- building ----------------------------------------------------------------------------
    def _build_bm25(self, chunks: list[Chunk]) -> None:
        """BM25 over `chunks`, and which terms each source uses. `lexical` reads one tuple, so a
        search in another thread during a switch sees the old chunks or the new, never a mix."""
        import bm25s

        tokens = [self.tokenize(c.text) for c in chunks]
        bm25 = bm25s.BM25()
        # An empty token list would make bm25s drop the document and shift every index after it.
        bm25.index([t or ["_"] for t in tokens], show_progress=False)
        # Which stemmed terms each source uses: the lexical side of a source's confidence.
        terms: dict[str, set[str]] = {}
        for chunk, chunk_tokens in zip(chunks, tokens, strict=True):
            terms.setdefault(chunk.source_id, set()).update(chunk_tokens)
        self._lexical = (bm25, bm25.vocab_dict, chunks)
        self.chunks, self.source_of = chunks, {c.id: c.source_id for c in chunks}
        self.source_terms = {sid: frozenset(t) for sid, t in terms.items()}
        self.term_sources = Counter(t for ts in self.source_terms.values() for t in ts)

    def sync(self, show_progress: bool = False) -> IndexSync:
        """Bring Chroma in line with the knowledge base, re-embedding only what changed. A
        generation the pointer did not name (a new one, the first, or one read because the named
        one was deleted) is published when it is complete."""
        with reading_index(self.settings):
            report = self._sync(show_progress)
            self._publish()
            return report

    def _sync(self, show_progress: bool) -> IndexSync:
        started = time.perf_counter()
        stored_fp: dict[str, str] = {}
        stored_count: Counter[str] = Counter()
        for _, _, meta in _stored(self.collection, ["metadatas"]):
            stored_fp[str(meta["source_id"])] = str(meta["fingerprint"])
            stored_count[str(meta["source_id"])] += 1
        wanted_count = Counter(c.source_id for c in self.wanted)
        report = IndexSync(chunks=len(self.wanted))
        for source_id, fp in self._fingerprints.items():
            if source_id not in stored_fp:
                report.added.append(source_id)
            elif stored_fp[source_id] != fp or stored_count[source_id] != wanted_count[source_id]:
                report.updated.append(source_id)  # a count mismatch means an interrupted build
            else:
                report.unchanged += 1
        report.removed = sorted(set(stored_fp) - set(self._fingerprints))
        stale = report.updated + report.removed
        for start in range(0, len(stale), 500):  # bounded, for SQLite's variable limit
            self.collection.delete(where={"source_id": {"$in": stale[start: start + 500]}})
        todo = set(report.added + report.updated)
        self._embed_and_store([c for c in self.wanted if c.source_id in todo], show_progress)
        report.embedded_chunks = sum(wanted_count[s] for s in todo)
        report.seconds = time.perf_counter() - started
        return report

    def _publish(self) -> None:
        now = read_pointer(self.client, self.kb_path)
        if now is not None and now.generation == self.collection.name:
            return
        if not self._new and now != self._pointer_at_open:
            return  # another process switched it while this one synced: its choice stands
        replaced = named_by(self.client, self.kb_path, now)  # what readers use until now
        previous = replaced.name if replaced is not None and replaced.id != self.collection.id else ""
        self.published = Pointer(self.collection.name, previous)
        write_pointer(self.client, self.kb_path, self.published)

    def _embed_and_store(self, chunks: list[Chunk], show_progress: bool) -> None:
        if not chunks:
            return
        # The default knowledge base ships its vectors: a first start embeds none of its chunks.
        shipped = shipped_vectors(self.embedder, [c.text for c in chunks])
        with tqdm(total=len(chunks), desc="Indexing chunks", unit="chunk",
                  disable=not show_progress) as bar:
            for start in range(0, len(chunks), EMBED_BATCH):
                batch = chunks[start: start + EMBED_BATCH]
                vectors = self._vectors([c.text for c in batch], shipped)
                self.collection.add(
                    ids=[c.id for c in batch], embeddings=vectors, documents=[c.text for c in batch],
                    metadatas=[{"source_id": c.source_id, "kind": c.kind, "heading": c.heading,
                                "fingerprint": self._fingerprints[c.source_id]} for c in batch],
                )
                bar.update(len(batch))

    def _vectors(self, texts: list[str], shipped: dict[str, np.ndarray]) -> np.ndarray:
        if missing := [t for t in texts if t not in shipped]:
            shipped = {**shipped, **dict(zip(missing, self.embedder.encode_known(missing), strict=True))}
        return np.stack([shipped[t] for t in texts])

    # -- following rebuilds ------------------------------------------------------------------
    def follow_pointer(self) -> bool:
        """Where a turn starts: if a rebuild has switched the pointer, read the generation it
        names from now on; True if this index moved. When nothing changed this costs one small
        read. A pointer that cannot be read leaves the index as it is (the turn's own search says
        what is wrong, and a crisis reply needs no index)."""
        try:
            with reading_index(self.settings):
                pointer = read_pointer(self.client, self.kb_path)
                if pointer is None or pointer.generation == self.collection.name:
                    return False
                return self._switch(away_from=self.collection.id)
        except CafbotError as error:
            log.warning("the index pointer could not be read: %s", error)
            return False

    def _switch(self, away_from) -> bool:
        """Move from the collection with id `away_from` to the current complete generation: its
        chunks as stored, and BM25 over them. False if there is no other to move to."""
        with self._switching:
            if self.collection.id != away_from:
                return True  # another thread of this process moved it already
            found = current_generation(self.client, self.kb_path)
            if found is None or found.id == away_from:
                return False
            _search_broadly(found)
            self._build_bm25(self._stored_chunks(found))
            self.collection = found
        log.info("the index of %s is now read from %s", self.kb_path, found.name)
        return True

    def _stored_chunks(self, collection) -> list[Chunk]:
        """A generation's chunks as it stores them, in the knowledge base's order. Only those of
        sources this process has: it cannot show or cite the others."""
        known = {c.id: c for c in self.wanted}
        order = {c.id: n for n, c in enumerate(self.wanted)}
        chunks = []
        for cid, text, meta in _stored(collection, ["documents", "metadatas"]):
            if str(meta["source_id"]) not in self._fingerprints:
                continue
            chunk = known.get(cid)
            if chunk is None or chunk.text != text:
                chunk = Chunk(id=cid, source_id=str(meta["source_id"]), kind=meta["kind"],
                              heading=str(meta.get("heading") or ""), text=text or "")
            chunks.append(chunk)
        return sorted(chunks, key=lambda c: (order.get(c.id, len(order)), c.id))

    # -- searching ---------------------------------------------------------------------------
    def dense(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        """Per query vector, the `n` nearest chunks with their cosine similarity, best first. If
        the generation read was deleted (by hand), the current one is read instead."""
        with reading_index(self.settings):
            try:
                return self._dense(vectors, n)
            except Exception as error:
                if not is_gone(error):
                    raise
                gone = self.collection
                if not self._switch(away_from=gone.id):
                    where = self.settings.retrieval.chroma_url or self.settings.index_dir
                    raise IndexDamaged(
                        f"{where}: no complete index of {self.kb_path} (its generation {gone.name} "
                        f"was deleted); build one with `{REBUILD_COMMAND}`.") from error
                return self._dense(vectors, n)

    def _dense(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        collection, source_of = self.collection, self.source_of
        n = min(n, len(source_of))
        if n == 0:
            return [[] for _ in range(len(vectors))]
        found = collection.query(query_embeddings=vectors, n_results=n, include=["distances"])
        # A chunk of a source this process lacks (a generation built from newer files) is skipped.
        return [[(cid, 1.0 - float(d)) for cid, d in zip(ids, dists, strict=True) if cid in source_of]
                for ids, dists in zip(found["ids"], found["distances"] or [], strict=True)]

    def lexical(self, text: str, n: int) -> list[tuple[str, float]]:
        """The `n` best BM25 chunks with a positive score, best first."""
        bm25, vocab, chunks = self._lexical
        tokens = [t for t in self.tokenize(text) if t in vocab]
        if not tokens:
            return []
        scores = bm25.get_scores(tokens)
        n = min(n, len(scores))
        top = np.argpartition(-scores, n - 1)[:n]  # a full sort of 100k scores costs ~5 ms
        top = top[np.lexsort((top, -scores[top]))]
        return [(chunks[i].id, float(scores[i])) for i in top if scores[i] > 0]

    def source_idf(self, term: str) -> float:
        """Inverse document frequency over sources; a term no source uses gets the highest."""
        n, df = len(self.source_terms), self.term_sources.get(term, 0)
        return float(np.log(1 + (n - df + 0.5) / (df + 0.5)))
