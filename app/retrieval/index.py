"""The chunk index: dense vectors in Chroma, BM25 in memory, both over the same chunks.

Chroma keeps, with every chunk, a fingerprint of its source (text, metadata, chunking and model
settings). Opening the index compares fingerprints and re-embeds only the sources that were added
or changed, and drops the chunks of removed ones; everything else is reused from disk. BM25 is
rebuilt in memory on every open, because for a knowledge base it takes milliseconds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
from pydantic import BaseModel
from tqdm import tqdm

from app.core.config import Settings
from app.core.embeddings import Embedder
from app.core.errors import CafbotError, ConfigError
from app.kb.loader import KnowledgeBase
from app.retrieval.chunking import Chunk, chunk_source, source_fingerprint

_TOKEN = re.compile(r"[a-z0-9]+")
_BATCH = 256
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


def collection_name(kb_path: Path) -> str:
    """One collection per knowledge-base folder, so two knowledge bases never share an index."""
    key = hashlib.sha1(str(kb_path.resolve()).encode()).hexdigest()[:16]
    return f"cafbot-{key}"


def chroma_client(settings: Settings):
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    url = settings.retrieval.chroma_url
    if not url:
        settings.index_dir.mkdir(parents=True, exist_ok=True)
        # Chroma caches one system per path string in each process: a relative path would make
        # ".cafbot/index" in two working directories share the first one's database.
        return chromadb.PersistentClient(path=str(settings.index_dir.resolve()), settings=chroma_settings)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"retrieval.chroma_url: {url!r} is not an http(s) URL of a Chroma server.")
    return chromadb.HttpClient(host=parsed.hostname, ssl=parsed.scheme == "https",
                               port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                               settings=chroma_settings)


REBUILD_COMMAND = "cafbot kb index --rebuild"


class IndexDamaged(CafbotError):
    """The index cannot be opened or read; the message names it and the repair command."""


class IndexBusy(CafbotError):
    """Another process holds the local index's write lock: nothing is damaged, and rebuilding
    would throw away what that process is writing."""


LOCK_RETRIES = 5


def _is_locked(error: Exception) -> bool:
    """SQLite's refusal while another connection holds the write lock."""
    return "database is locked" in str(error)


@contextmanager
def reading_index(settings: Settings) -> Iterator[None]:
    """Chroma's own errors (a damaged SQLite file or vector segment, an unreadable folder, a server
    that fails) become one line naming the index and `cafbot kb index --rebuild`."""
    try:
        yield
    except CafbotError:
        raise
    except Exception as error:
        if _is_locked(error) and not settings.retrieval.chroma_url:
            raise IndexBusy(f"{settings.index_dir}: the search index is busy (another cafbot process is "
                            "writing to it); try again in a moment.") from error
        reason = (str(error).strip().splitlines() or [""])[0][:200]
        reason = f"{type(error).__name__}: {reason}" if reason else type(error).__name__
        if settings.retrieval.chroma_url:
            raise IndexDamaged(
                f"{settings.retrieval.chroma_url}: the Chroma server failed ({reason}). Check that it "
                f"is running; if its collection is damaged, rebuild it with `{REBUILD_COMMAND}`."
            ) from error
        raise IndexDamaged(
            f"{settings.index_dir}: the search index cannot be opened or read ({reason}). "
            f"Rebuild it with `{REBUILD_COMMAND}`.") from error


def _while_locked(write: Callable[[], object], retries: int = LOCK_RETRIES) -> None:
    """A write to the local index, tried again while another connection holds SQLite's lock (a
    second process opening the same index, or Chroma's own background flush)."""
    for attempt in range(retries):
        try:
            write()
            return
        except Exception as error:
            if not _is_locked(error) or attempt == retries - 1:
                raise
            time.sleep(0.1 * 2 ** attempt)


def drop_index(settings: Settings, kb_path: Path, *, whole_folder: bool = False) -> str:
    """Drop this knowledge base's collection, so the next open builds it from scratch. A local
    index that cannot even be opened (or `whole_folder`) is removed altogether: it holds only
    derived data, and other knowledge bases' collections in it are rebuilt on their next use.
    Returns what was done, for the user."""
    name = collection_name(kb_path)
    if not whole_folder:
        try:
            with reading_index(settings):
                client = chroma_client(settings)
                if name in _collection_names(client):
                    client.delete_collection(name)
                    return f"Dropped the index of {kb_path} ({name})."
                return f"No index of {kb_path} to drop ({name})."
        except IndexDamaged:
            if settings.retrieval.chroma_url:
                raise  # a server's storage is the server's to repair
    folder = settings.index_dir
    _forget_local_clients()
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        try:
            shutil.rmtree(folder)
        except OSError as error:
            raise IndexDamaged(f"{folder}: cannot remove the damaged index ({error.strerror or error}); "
                               "remove the folder by hand and run the command again.") from error
    return f"Removed the damaged index folder {folder}."


def _collection_names(client) -> set[str]:
    return {getattr(c, "name", c) for c in client.list_collections()}


def _forget_local_clients() -> None:
    """Chroma caches one system per folder in each process; after the folder is removed the cache
    would point at deleted files."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient
    except ImportError:  # older chromadb
        from chromadb.api.client import SharedSystemClient
    SharedSystemClient.clear_system_cache()


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


class ChunkIndex:
    def __init__(self, kb: KnowledgeBase, settings: Settings, *, embedder: Embedder, client=None):
        self.settings = settings
        self.embedder = embedder
        retrieval = settings.retrieval
        self.chunks: list[Chunk] = [c for s in kb for c in
                                    chunk_source(s, retrieval.chunk_words, retrieval.chunk_overlap_words)]
        self.source_of = {c.id: c.source_id for c in self.chunks}
        self._fingerprints = {s.id: source_fingerprint(s, self.embedder.name, retrieval.chunk_words,
                                                       retrieval.chunk_overlap_words) for s in kb}
        with reading_index(settings):
            self.collection = (client or chroma_client(settings)).get_or_create_collection(
                collection_name(kb.path), embedding_function=None,
                configuration={"hnsw": {"space": "cosine", "ef_search": _EF_SEARCH,
                                        "ef_construction": _EF_CONSTRUCTION}},
                metadata={"knowledge_base": str(kb.path.resolve())[-500:], "model": self.embedder.name},
            )
            if _ef_search(self.collection) < _EF_SEARCH:  # an index built before it was raised
                _while_locked(lambda: self.collection.modify(configuration={"hnsw": {"ef_search": _EF_SEARCH}}))
        self._build_bm25()

    # -- building ----------------------------------------------------------------------------
    def _build_bm25(self) -> None:
        import bm25s

        self.tokenize = Tokenizer()
        tokens = [self.tokenize(c.text) for c in self.chunks]
        self.bm25 = bm25s.BM25()
        # An empty token list would make bm25s drop the document and shift every index after it.
        self.bm25.index([t or ["_"] for t in tokens], show_progress=False)
        self._vocab = self.bm25.vocab_dict
        # Which stemmed terms each source uses: the lexical side of a source's confidence.
        terms: dict[str, set[str]] = {}
        for chunk, chunk_tokens in zip(self.chunks, tokens, strict=True):
            terms.setdefault(chunk.source_id, set()).update(chunk_tokens)
        self.source_terms = {sid: frozenset(t) for sid, t in terms.items()}
        self.term_sources = Counter(t for ts in self.source_terms.values() for t in ts)

    def sync(self, show_progress: bool = False) -> IndexSync:
        """Bring Chroma in line with the knowledge base, re-embedding only what changed."""
        with reading_index(self.settings):
            return self._sync(show_progress)

    def _sync(self, show_progress: bool) -> IndexSync:
        started = time.perf_counter()
        stored_fp: dict[str, str] = {}
        stored_count: Counter[str] = Counter()
        for meta in self._stored_metadata():
            stored_fp[str(meta["source_id"])] = str(meta["fingerprint"])
            stored_count[str(meta["source_id"])] += 1
        wanted_count = Counter(c.source_id for c in self.chunks)
        report = IndexSync(chunks=len(self.chunks))
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
        self._embed_and_store([c for c in self.chunks if c.source_id in todo], show_progress)
        report.embedded_chunks = sum(wanted_count[s] for s in todo)
        report.seconds = time.perf_counter() - started
        return report

    def _stored_metadata(self):
        """Every stored chunk's metadata, a page at a time: one `get` of a 100k-chunk collection
        exceeds SQLite's limit on query variables."""
        offset = 0
        while True:
            page = self.collection.get(include=["metadatas"], limit=_PAGE, offset=offset)
            if not page["ids"]:
                return
            yield from page["metadatas"] or []
            offset += len(page["ids"])

    def _embed_and_store(self, chunks: list[Chunk], show_progress: bool) -> None:
        if not chunks:
            return
        with tqdm(total=len(chunks), desc="Indexing chunks", unit="chunk",
                  disable=not show_progress) as bar:
            for start in range(0, len(chunks), _BATCH):
                batch = chunks[start: start + _BATCH]
                vectors = self.embedder.encode([c.text for c in batch])
                self.collection.add(
                    ids=[c.id for c in batch], embeddings=vectors, documents=[c.text for c in batch],
                    metadatas=[{"source_id": c.source_id, "kind": c.kind,
                                "fingerprint": self._fingerprints[c.source_id]} for c in batch],
                )
                bar.update(len(batch))

    # -- searching ---------------------------------------------------------------------------
    def dense(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        """Per query vector, the `n` nearest chunks with their cosine similarity, best first."""
        n = min(n, len(self.chunks))
        if n == 0:
            return [[] for _ in range(len(vectors))]
        with reading_index(self.settings):
            found = self.collection.query(query_embeddings=vectors, n_results=n, include=["distances"])
        return [[(cid, 1.0 - float(d)) for cid, d in zip(ids, dists, strict=True)]
                for ids, dists in zip(found["ids"], found["distances"] or [], strict=True)]

    def lexical(self, text: str, n: int) -> list[tuple[str, float]]:
        """The `n` best BM25 chunks with a positive score, best first."""
        tokens = [t for t in self.tokenize(text) if t in self._vocab]
        if not tokens:
            return []
        scores = self.bm25.get_scores(tokens)
        n = min(n, len(scores))
        top = np.argpartition(-scores, n - 1)[:n]  # a full sort of 100k scores costs ~5 ms
        top = top[np.lexsort((top, -scores[top]))]
        return [(self.chunks[i].id, float(scores[i])) for i in top if scores[i] > 0]

    def source_idf(self, term: str) -> float:
        """Inverse document frequency over sources; a term no source uses gets the highest."""
        n, df = len(self.source_terms), self.term_sources.get(term, 0)
        return float(np.log(1 + (n - df + 0.5) / (df + 0.5)))
