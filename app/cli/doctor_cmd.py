"""`cafbot doctor`: check the configuration, data dir, stores, index, knowledge base and model
endpoints; one line per check with the fix. Nothing is changed or created."""

from __future__ import annotations

import json
import sqlite3
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape

from app.cli.common import console, friendly_errors, load_settings
from app.core.config import ROLES, Provider, Settings, config_file
from app.core.errors import CafbotError
from app.core.models.health import endpoint_health


@dataclass
class Check:
    name: str
    status: Literal["ok", "FAIL", "skip"]
    detail: str
    fix: str = ""


def ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, "FAIL", detail, fix)


def skip(name: str, detail: str) -> Check:
    return Check(name, "skip", detail)


@friendly_errors
def doctor(as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False) -> None:
    """Check the data dir, the stores, the index, the configuration, the knowledge base and the
    model endpoints; print one line per check with the fix. Exit 1 if any check fails."""
    checks = run_checks()
    failed = any(c.status == "FAIL" for c in checks)
    if as_json:
        typer.echo(json.dumps({"ok": not failed, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        style = {"ok": "green", "FAIL": "bold red", "skip": "dim"}
        for c in checks:
            fix = f" [bold]— fix:[/] {escape(c.fix)}" if c.fix else ""
            console.print(f"[{style[c.status]}]{c.status:<4}[/] {escape(c.name):<{width}}  "
                          f"{escape(c.detail)}{fix}", highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


def run_checks() -> list[Check]:
    try:
        settings = load_settings()
    except CafbotError as error:
        return [fail("configuration", str(error), "correct the setting named above"),
                skip("everything else", "the configuration did not load")]
    source = config_file()
    checks = [ok("configuration", f"profile {settings.profile}; "
                                  + (f"from {source}" if source.is_file() else "no cafbot.toml")
                                  + "; no unknown CAFBOT_ variables")]
    checks += check_data_dir(settings)
    if settings.checkpointer.kind == "postgres" and settings.checkpointer.postgres_url:
        checks.append(check_postgres_conversations(settings.checkpointer.postgres_url))
    else:
        checks.append(check_sqlite("conversations", settings.checkpoint_path))
    if settings.store_url and not settings.store_url.startswith("sqlite"):
        checks.append(check_postgres_store(settings.store_url))
    else:
        checks.append(check_sqlite("store", settings.data_dir / "store.sqlite"))
    kb, kb_check = check_knowledge_base(settings)
    checks.append(check_index(settings, kb))
    checks.append(kb_check)
    checks += check_models(settings)
    return checks


# -- the data dir --------------------------------------------------------------------------------
def check_data_dir(settings: Settings) -> list[Check]:
    folder = settings.data_dir
    if not folder.exists():
        return [fail("data dir", f"{folder} does not exist",
                     "`cafbot kb index` creates it and builds the index")]
    if not folder.is_dir():
        return [fail("data dir", f"{folder} is not a folder",
                     "move it away, or set data_dir to a folder")]
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return [fail("data dir", f"{folder} is not writable ({error.strerror or error})",
                     f"make it yours and writable: chmod u+rwx {folder}")]
    checks = [ok("data dir", f"{folder} exists and is writable")]
    private = [folder, *(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())]
    shared = [p for p in private if stat.S_IMODE(p.stat().st_mode) & 0o077]
    if shared:
        listing = ", ".join(f"{p} ({stat.S_IMODE(p.stat().st_mode):o})" for p in shared[:5])
        more = f" and {len(shared) - 5} more" if len(shared) > 5 else ""
        checks.append(fail("data dir modes", f"readable by other users: {listing}{more}",
                           f"chmod -R go-rwx {folder}"))
    else:
        checks.append(ok("data dir modes", "only you can read the folder and its files"))
    return checks


# -- the SQLite stores ---------------------------------------------------------------------------
def check_sqlite(name: str, path: Path) -> Check:
    if not path.exists():
        return ok(name, f"{path} not created yet (the first conversation creates it)")
    try:
        db = sqlite3.connect(path, timeout=5)
        try:
            rows = db.execute("PRAGMA integrity_check").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as error:
        rows = [(str(error),)]
    if rows == [("ok",)]:
        return ok(name, f"{path} opens and passes PRAGMA integrity_check")
    problem = "; ".join(str(r[0]) for r in rows[:3])
    return fail(name, f"{path}: {problem}",
                f"move it aside (mv {path} {path}.broken); a new, empty one is created on the next "
                "run (what the old one held is not in it)")


# -- the shared stores on Postgres (read only: nothing is created or upgraded) ------------------
def check_postgres_conversations(url: str) -> Check:
    from langgraph.checkpoint.postgres import PostgresSaver

    return _postgres_schema("conversations", url, "SELECT max(v) FROM checkpoint_migrations",
                            "checkpoint_migrations", len(PostgresSaver.MIGRATIONS) - 1)


def check_postgres_store(url: str) -> Check:
    from app.store.database import MIGRATIONS

    return _postgres_schema("store", url, "SELECT max(version) FROM schema_version", "schema_version",
                            len(MIGRATIONS))


def _postgres_schema(name: str, url: str, query: str, table: str, needed: int) -> Check:
    from sqlalchemy import create_engine, make_url, text
    from sqlalchemy.exc import SQLAlchemyError

    sqlalchemy_url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    where = make_url(sqlalchemy_url).render_as_string(hide_password=True)
    engine = create_engine(sqlalchemy_url, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as db:
            exists = db.execute(text("SELECT to_regclass(:t) IS NOT NULL"), {"t": table}).scalar()
            version = db.execute(text(query)).scalar() if exists else None
    except SQLAlchemyError as error:
        reason = (str(getattr(error, "orig", error)).strip().splitlines() or ["unreachable"])[0][:200]
        return fail(name, f"{where}: cannot connect ({reason})", "check that the server is running and the URL")
    finally:
        engine.dispose()
    if version is None:
        return ok(name, f"{where}: reachable, no tables yet (the first replica or `cafbot migrate` creates them)")
    if version < needed:
        return fail(name, f"{where}: schema version {version}, this cafbot needs {needed}", "`cafbot migrate`")
    if version > needed:
        return fail(name, f"{where}: schema version {version}, newer than this cafbot's ({needed})", "upgrade cafbot")
    return ok(name, f"{where}: reachable, schema version {version}")


# -- the knowledge base and its index ------------------------------------------------------------
def check_knowledge_base(settings: Settings):
    from app.kb import load_knowledge_base

    where = settings.knowledge_base
    try:
        kb = load_knowledge_base(where)
    except CafbotError as error:
        lines = str(error).strip().splitlines() or [""]
        more = f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else ""
        return None, fail("knowledge base", f"{lines[0]}{more}",
                          f"fix the files named; `cafbot kb check {where}` lists every problem")
    if quarantined := getattr(kb, "quarantined", []):
        ids = ", ".join(q.source.id for q in quarantined)
        return kb, fail("knowledge base", f"{where}: {len(quarantined)} sources quarantined for "
                                          f"flagged text, neither indexed nor shown ({ids})",
                        f"`cafbot kb check {where}` names each file and line; fix the text or approve it")
    review = sum(1 for s in kb if s.needs_review)
    note = f"; {review} drafted summaries to review" if review else ""
    return kb, ok("knowledge base", f"{where}: {len(kb)} sources load and validate{note}")


def check_index(settings: Settings, kb) -> Check:
    from app.core.embeddings import MODEL_NAME
    from app.retrieval.chroma_store import (
        REBUILD_COMMAND,
        IndexDamaged,
        chroma_client,
        reading_index,
    )
    from app.retrieval.chunking import chunk_source, source_fingerprint
    from app.retrieval.generations import current_generation

    if kb is None:
        return skip("index", "the knowledge base does not load")
    where = settings.retrieval.chroma_url or settings.index_dir
    if not settings.retrieval.chroma_url and not (settings.index_dir / "chroma.sqlite3").exists():
        return fail("index", f"{where}: no index yet", "`cafbot kb index` builds it")
    retrieval = settings.retrieval
    expected = {s.id: len(chunk_source(s, retrieval.chunk_words, retrieval.chunk_overlap_words)) for s in kb}
    try:
        with reading_index(settings):
            collection = current_generation(chroma_client(settings), kb.path)
            if collection is None:
                return fail("index", f"{where}: no index of {kb.path}", "`cafbot kb index` builds it")
            count = collection.count()
            fingerprints: dict[str, str] = {}
            for offset in range(0, count, 5000):  # in pages: SQLite limits a query's variables
                page = collection.get(include=["metadatas"], limit=5000, offset=offset)
                fingerprints |= {str(m["source_id"]): str(m["fingerprint"]) for m in page["metadatas"] or []}
            if count:  # a nearest-neighbour query reads the vector segment, not only SQLite
                vector = collection.get(limit=1, include=["embeddings"])["embeddings"][0]
                collection.query(query_embeddings=[vector], n_results=1)
    except IndexDamaged as error:
        return fail("index", str(error), f"`{REBUILD_COMMAND}`")
    wanted = sum(expected.values())
    if count != wanted:
        return fail("index", f"{where}: {count} chunks indexed, the knowledge base has {wanted}",
                    "`cafbot kb index` brings it up to date")
    changed = sum(1 for s in kb if fingerprints.get(s.id) != source_fingerprint(
        s, MODEL_NAME, retrieval.chunk_words, retrieval.chunk_overlap_words))
    note = f"; {changed} sources changed since indexing (re-embedded on next use)" if changed else ""
    return ok("index", f"{where}: {count} chunks, matching the knowledge base{note}")


# -- model endpoints -----------------------------------------------------------------------------
def check_models(settings: Settings) -> list[Check]:
    enabled = [r for r in ROLES if settings.models.for_role(r).enabled]
    if not enabled:
        return [skip("models", f"no role uses a model (profile {settings.profile})")]
    seen: dict[tuple[str, str], Check] = {}
    checks = []
    for role in enabled:
        spec = settings.models.for_role(role)
        name = f"model {role}"
        if spec.provider is Provider.LOCAL:
            checks.append(_check_local(settings, name))
            continue
        url = (spec.base_url or "https://api.openai.com/v1").rstrip("/")
        key = spec.api_key()
        if key is None and not spec.base_url:
            checks.append(fail(name, f"{spec.model} at {url}: {spec.api_key_env} is not set",
                               f"export {spec.api_key_env}, or set models.{role}.base_url"))
            continue
        found = seen.get((url, spec.api_key_env)) or _get_models(url, key.get_secret_value() if key else None)
        seen[(url, spec.api_key_env)] = found
        checks.append(Check(name, found.status, f"{spec.model} at {found.detail}", found.fix))
    return checks


def _check_local(settings: Settings, name: str) -> Check:
    from importlib.util import find_spec

    from app.core.models.local_server import is_listening, port_taken, read_pid_file

    server = settings.local_server
    if find_spec("llama_cpp") is None:
        return fail(name, "the local provider needs llama.cpp, which is not installed",
                    "pip install -e '.[local]'")
    record = read_pid_file(settings)
    if record is not None:
        found = _get_models(server.base_url, None)
        return Check(name, found.status, f"cafbot's server (pid {record['server_pid']}) at {found.detail}",
                     found.fix)
    if is_listening(server.host, server.port):
        return fail(name, str(port_taken(settings)), "stop that program or change local_server.port")
    return ok(name, f"{server.base_url}: not running; `cafbot ask` and `cafbot chat` start it on demand")


def _get_models(base_url: str, api_key: str | None) -> Check:
    health = endpoint_health(base_url, api_key)
    return ok("", health.detail) if health.ok else fail("", health.detail, health.fix)
