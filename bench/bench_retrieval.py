"""Retrieval benchmark: index build time, warm per-question latency and memory, for our knowledge
base and for a synthetic one of about 100,000 chunks.

    .venv/bin/python bench/bench_retrieval.py [--chunks 100000] [--pool 3000] [--skip-synthetic]

The synthetic knowledge base is made of sentences from ours, shuffled into ~4,800 long sources.
Embedding 100,000 chunks on two CPU cores would take most of an hour, so its chunk vectors are
drawn from a pool of `--pool` real embeddings (of distinct synthetic chunks) plus small noise; the
questions are embedded for real, and Chroma, BM25, fusion and scoring run exactly as in production.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from rich.console import Console
from rich.table import Table

from app.core.config import DEFAULT_KNOWLEDGE_BASE, REPO_ROOT, Settings
from app.core.embeddings import Embedder
from app.core.stats import percentile
from app.kb.loader import KnowledgeBase, load_knowledge_base
from app.kb.schema import Source
from app.retrieval import SourceIdentifier
from app.retrieval.evaluate import load_questions
from app.retrieval.index import ChunkIndex

console = Console(width=150)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class PooledEmbedder:
    """Questions (small batches) are embedded for real; corpus batches get a pooled real vector
    chosen by the text's hash, plus noise, so 100k chunks are indexed in minutes, not an hour."""

    def __init__(self, real: Embedder, pool_texts: list[str], noise: float = 0.03):
        self.real, self.name, self.dimensions = real, real.name, real.dimensions
        started = time.perf_counter()
        self.pool = real.encode(pool_texts, batch_size=128)
        self.pool_seconds = time.perf_counter() - started
        self.noise = noise

    def known_words(self) -> set[str]:
        return self.real.known_words()

    def encode_known(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        if len(texts) <= 16:
            return self.real.encode(texts)
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            rng = np.random.default_rng(seed)
            vector = self.pool[seed % len(self.pool)] + rng.normal(0, self.noise, self.dimensions)
            rows.append(vector / np.linalg.norm(vector))
        return np.asarray(rows, dtype=np.float32)


def synthetic_kb(real: KnowledgeBase, target_chunks: int, words_per_source: int, seed: int = 7) -> KnowledgeBase:
    sentences = [s.strip() for src in real for s in re.split(r"(?<=[.!?])\s+", re.sub(r"#+ .*\n", "", src.body))
                 if len(s.split()) >= 5]
    titles = [src.title for src in real]
    rng = random.Random(seed)
    chunks_per_source = max(1, words_per_source // 90) + 1  # windows of 120 words, step 90, + card
    sources = []
    for n in range(max(1, target_chunks // chunks_per_source)):
        body, words = [], 0
        while words < words_per_source:
            sentence = rng.choice(sentences)
            body.append(sentence)
            words += len(sentence.split())
        topic = rng.choice(titles)
        sources.append(Source(id=f"X{n:05d}", title=f"{topic} ({n})", summary=" ".join(body[:2]),
                              keywords=topic.lower().split()[:4], body=" ".join(body)))
    return KnowledgeBase(Path(f"/synthetic/{target_chunks}"), sources)


def measure(name: str, kb: KnowledgeBase, settings: Settings, embedder, questions: list[str]) -> dict:
    started = time.perf_counter()
    index = ChunkIndex(kb, settings, embedder=embedder)
    opened = time.perf_counter() - started
    report = index.sync(show_progress=True)
    build = time.perf_counter() - started
    started = time.perf_counter()
    ChunkIndex(kb, settings, embedder=embedder).sync()
    reopen = time.perf_counter() - started
    identifier = SourceIdentifier(kb, index, settings)
    getattr(embedder, "real", embedder).clear_cache()  # every question embedded afresh, as a new user message would be
    identifier.identify("a warm-up question that is not in the set")
    timings = []
    for question in questions:
        t = time.perf_counter()
        identifier.identify(question)
        timings.append((time.perf_counter() - t) * 1000)
    return {"name": name, "sources": len(kb), "chunks": report.chunks, "build_s": build,
            "bm25_and_chunking_s": opened, "reopen_s": reopen,
            "p50": percentile(timings, 50), "p95": percentile(timings, 95),
            "rss": rss_mb(), "questions": len(timings)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--pool", type=int, default=3000)
    parser.add_argument("--skip-synthetic", action="store_true")
    args = parser.parse_args()

    started = time.perf_counter()
    embedder = Embedder()
    load_s = time.perf_counter() - started
    baseline = rss_mb()
    real = load_knowledge_base(DEFAULT_KNOWLEDGE_BASE)
    questions = [q.question for q in load_questions(REPO_ROOT / "scenarios/retrieval/questions.jsonl")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="cafbot-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "ours")
        rows.append(measure("ours (embedded for real)", real, settings, embedder, questions))
        if not args.skip_synthetic:
            kb = synthetic_kb(real, args.chunks, words_per_source=1800)
            pool_texts = [f"{s.title}. {s.body[:600]}" for s in list(kb)[: args.pool]]
            pooled = PooledEmbedder(embedder, pool_texts)
            console.print(f"[dim]pooled {len(pool_texts)} real embeddings in {pooled.pool_seconds:.0f} s[/]")
            settings = Settings(data_dir=Path(tmp) / "synthetic")
            rows.append(measure(f"synthetic (pooled vectors, {args.pool} real + noise)", kb, settings, pooled, questions))

    table = Table(title=f"Retrieval benchmark: {os.cpu_count()} CPUs; model load {load_s:.1f} s, process RSS "
                        f"{baseline:.0f} MB after it; {rows[0]['questions']} questions per run, warm",
                  title_justify="left")
    for column in ("knowledge base", "sources", "chunks", "index build s", "chunk+BM25 s", "re-open s", "p50 ms",
                   "p95 ms", "RSS MB after"):
        table.add_column(column, justify="left" if column == "knowledge base" else "right")
    for r in rows:
        table.add_row(r["name"], f"{r['sources']:,}", f"{r['chunks']:,}", f"{r['build_s']:.1f}",
                      f"{r['bm25_and_chunking_s']:.1f}", f"{r['reopen_s']:.1f}", f"{r['p50']:.1f}", f"{r['p95']:.1f}", f"{r['rss']:.0f}")
    console.print(table)
    console.print("[dim]index build: chunking + BM25 + embedding + Chroma writes, from empty (chunk+BM25 is "
                  "the in-memory part of it); re-open: the same with nothing changed (fingerprints "
                  "compared, BM25 rebuilt). RSS: the whole process, model included.[/]")


if __name__ == "__main__":
    main()
