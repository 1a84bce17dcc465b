"""Effective configuration: a profile's defaults, then `cafbot.toml`, `.env` and environment variables.

Here: the model roles a profile fills, the settings as a whole, and where each setting comes from
(with errors that name it). Each other table's record is in `app.core.config_sections`.

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

from app.core.config_sections import (
    DEFAULT_CRISIS_CONTACTS,
    Caf,
    Checkpointer,
    CrisisContact,
    InputLimits,
    LocalServer,
    Prompting,
    Retrieval,
    Ui,
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
