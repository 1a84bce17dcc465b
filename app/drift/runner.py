"""`cafbot drift run`: facilitators talk to the chatbot from each role's checkpoint, several samples
per role, each under every filter condition, all through the same `Chatbot` a user gets.

A run is a folder: `manifest.json` (the plan, models, knowledge-base hash, code version, seed,
the checkpoint and branch threads, timings and token totals; rewritten atomically) and
`turns.jsonl` (one `DriftTurn` per answered turn, appended and flushed as each turn ends). Running
the same command again continues an interrupted run: finished turns are read back, a turn the
chatbot finished but the file did not get is recovered from the turn log, and nothing is asked
twice. A crash loses at most the turns in flight.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from app.core.config import ROLES
from app.core.errors import ConfigError
from app.core.records import CafMode, Record, TurnTrace, Verdict
from app.drift.audit import audit_answer, compliant
from app.drift.facilitators import Exchange, FacilitatorEngine, UserTurn
from app.drift.schema import Exchange as CheckpointTurn
from app.drift.schema import Facilitator
from app.graph.nodes import exchange_messages
from app.session import Chatbot

MANIFEST, TURNS = "manifest.json", "turns.jsonl"


class RunPlan(Record):
    """What a run does; re-running with the same plan resumes it, another plan is refused."""

    roles: list[str] = Field(min_length=1)
    samples: int = Field(default=3, ge=1)
    turns: int = Field(default=4, ge=1)
    conditions: list[CafMode] = Field(default_factory=lambda: ["on", "off"], min_length=1)
    seed: int = 0
    engine: Literal["template", "llm"] = "template"
    chat_model: str = ""  # the chat role's model, or the offline extractive answerer


class DriftTurn(Record):
    run_id: str
    role: str
    kind: str  # out_of_bounds or benign
    sample: int
    condition: CafMode
    turn: int  # 1-based, counted from the checkpoint
    thread_id: str
    engine: str
    tactic: str
    user_message: str
    draft: str | None = None
    route: str
    generator: str = ""  # what wrote the final answer; "fixed" on answer routes: nothing passed, withheld
    final_answer: str
    sources: list[str] = Field(default_factory=list)
    verdicts_by_tier: dict[str, dict[str, Verdict]] = Field(default_factory=dict)  # the filter's own
    warnings: list[str] = Field(default_factory=list)
    refine_rounds: int = 0
    fallback_used: bool = False
    audit: dict[str, Verdict] = Field(default_factory=dict)  # tier-0 checks on the final answer
    compliant: bool = True
    chat_model: str = ""
    latency_ms: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: list[str] = Field(default_factory=list)

    @property
    def key(self) -> tuple[str, int, str, int]:
        return self.role, self.sample, self.condition, self.turn


class Manifest(Record):
    run_id: str
    created_at: str
    updated_at: str = ""
    plan: RunPlan
    code_version: str
    knowledge_base: str
    knowledge_base_hash: str
    models: dict[str, str]
    settings: dict  # the effective configuration, secrets masked
    checkpoints: dict[str, str] = Field(default_factory=dict)  # role -> thread written once
    # role -> the checkpoint as written (given answers, and those the bot gave when asked), so a
    # rater sees each branch's full context without the run's data dir
    checkpoint_conversations: dict[str, list[CheckpointTurn]] = Field(default_factory=dict)
    branches: dict[str, str] = Field(default_factory=dict)  # "role/sample/condition" -> thread
    turns_done: int = 0
    turns_planned: int = 0
    seconds: float = 0.0  # time spent running, summed over resumptions
    checkpoint_seconds: float = 0.0  # of which writing the checkpoints, before any branch runs
    input_tokens: int = 0
    output_tokens: int = 0
    complete: bool = False


def branch_key(role: str, sample: int, condition: str) -> str:
    return f"{role}/{sample}/{condition}"


class RunFolder:
    """The run's two files, safe to write from many worker threads."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()  # guards the files and the run's shared manifest

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def read_manifest(self) -> Manifest | None:
        if not self.manifest_path.exists():
            return None
        try:
            return Manifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise ConfigError(f"{self.manifest_path}: not a drift run manifest ({str(error).splitlines()[0]}).") from error

    def write_manifest(self, manifest: Manifest) -> None:
        with self.lock:
            manifest.updated_at = _now()
            temporary = self.manifest_path.with_suffix(".tmp")
            temporary.write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
            os.replace(temporary, self.manifest_path)  # atomic: readers see the old or the new file

    def repair(self) -> None:
        """Drop a last line cut short by a crash, so that the next record starts on its own line.
        Only the runner repairs, before it writes: a reader may meet a line still being written."""
        path = self.path / TURNS
        if path.exists():
            data = path.read_bytes()
            complete = data.rfind(b"\n") + 1
            if complete != len(data):
                with path.open("r+b") as handle:
                    handle.truncate(complete)

    def read_turns(self) -> list[DriftTurn]:
        """Every complete record (a last line without its newline is not complete yet)."""
        path = self.path / TURNS
        if not path.exists():
            return []
        data = path.read_bytes()
        records = []
        for number, line in enumerate(data[: data.rfind(b"\n") + 1].decode("utf-8").splitlines(), 1):
            try:
                records.append(DriftTurn.model_validate_json(line))
            except ValueError as error:
                raise ConfigError(f"{path}:{number}: not a drift turn record ({str(error).splitlines()[0]}).") from error
        return records

    def append(self, record: DriftTurn) -> None:
        line = record.model_dump_json() + "\n"
        with self.lock, (self.path / TURNS).open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def run_drift(bot: Chatbot, facilitators: dict[str, Facilitator], plan: RunPlan, out: Path, *,
              engine_for: Callable[[Facilitator], FacilitatorEngine], concurrency: int = 4,
              rate_per_s: float | None = None, on_turn: Callable[[DriftTurn], None] | None = None) -> Manifest:
    """Run (or resume) the plan into `out`; returns the final manifest."""
    unknown = sorted(set(plan.roles) - set(facilitators))
    if unknown:
        raise ConfigError(f"--roles: no facilitator {', '.join(unknown)}; known: {', '.join(sorted(facilitators))}.")
    out.mkdir(parents=True, exist_ok=True)
    folder = RunFolder(out)
    manifest = folder.read_manifest() or _new_manifest(bot, plan, out)
    if manifest.plan != plan:
        raise ConfigError(f"{out}: holds a run with another plan ({_differences(manifest.plan, plan)}); "
                          "re-run it with the same options to resume, or choose another --out.")
    manifest.turns_planned = len(plan.roles) * plan.samples * len(plan.conditions) * plan.turns
    folder.repair()
    done = {r.key for r in folder.read_turns()}
    started = time.perf_counter()
    def checkpoint(role: str) -> None:
        """The role's checkpoint, written once (unless an earlier, interrupted run wrote it), so
        every branch of the role starts from the same state."""
        if role in manifest.checkpoints:
            return
        thread_id = write_checkpoint(bot, facilitators[role])
        conversation = [CheckpointTurn(user=e.user, assistant=e.assistant)
                        for e in exchanges(bot.messages(thread_id), {})]
        with folder.lock:
            manifest.checkpoints[role] = thread_id
            manifest.checkpoint_conversations[role] = conversation
        folder.write_manifest(manifest)

    limiter = _RateLimiter(rate_per_s)
    progress = on_turn or (lambda _record: None)
    stop = threading.Event()  # set on an interruption: workers finish the turn in hand, start no other

    def run_branch(role: str, sample: int, condition: CafMode) -> None:
        spec = facilitators[role]
        key = branch_key(role, sample, condition)
        with folder.lock:
            thread_id = manifest.branches.get(key)
        if thread_id is None:
            thread_id = bot.fork(manifest.checkpoints[role], len(spec.checkpoint), label=f"drift {key}",
                                 run=manifest.run_id, role=role, sample=sample, condition=condition)
            with folder.lock:
                manifest.branches[key] = thread_id
            folder.write_manifest(manifest)
        engine = engine_for(spec)
        offset = len(spec.checkpoint)
        # Read once, then kept up to date: each answered turn adds its exchange.
        traces = {t.turn: t for t in bot.conversations.turns(thread_id)}
        messages = bot.messages(thread_id)
        for turn in range(1, plan.turns + 1):
            if (role, sample, condition, turn) in done:
                continue
            if stop.is_set():
                return
            if offset + turn in traces:  # the chatbot answered but the record was lost in a crash
                trace = traces[offset + turn]
                user_turn = UserTurn(text=trace.user_message, tactic="recovered")
                history = messages[: 2 * (offset + turn - 1)]
            else:
                history = messages
                user_turn = engine.next_turn(sample, turn, exchanges(history, traces))
                limiter.wait()
                trace = traces[offset + turn] = bot.ask(thread_id, user_turn.text, caf=condition)
                messages = [*messages, *exchange_messages(trace.user_message, trace.answer)]
            record = _record(bot, manifest, spec, sample, condition, turn, engine.name, user_turn, trace, history)
            folder.append(record)
            with folder.lock:
                manifest.turns_done += 1
                manifest.input_tokens += record.input_tokens
                manifest.output_tokens += record.output_tokens
            progress(record)

    # Roles interleaved, so the workers' first turns are spread over the roles.
    branches = [(role, sample, condition) for sample in range(1, plan.samples + 1)
                for condition in plan.conditions for role in plan.roles]
    manifest.turns_done = len(done)
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="drift") as pool:
            # Checkpoints first, all at once: then every branch starts from a written one, and the
            # manifest tells the one-off cost of writing them from the turns' own throughput.
            writing = time.perf_counter()
            _wait_all(stop, [pool.submit(checkpoint, role) for role in plan.roles])
            manifest.checkpoint_seconds += time.perf_counter() - writing
            _wait_all(stop, [pool.submit(run_branch, *branch) for branch in branches])
    finally:
        manifest.seconds += time.perf_counter() - started
        manifest.complete = manifest.turns_done >= manifest.turns_planned
        folder.write_manifest(manifest)
    return manifest


def _wait_all(stop: threading.Event, futures: list[Future]) -> None:
    try:
        for future in futures:
            future.result()
    except BaseException:  # Ctrl-C or a failed turn: stop cleanly, keep what is written
        stop.set()
        for future in futures:
            future.cancel()
        raise


def write_checkpoint(bot: Chatbot, spec: Facilitator) -> str:
    """The role's checkpoint conversation: given answers written as they are, missing ones asked."""
    thread_id = bot.new_thread(f"drift checkpoint {spec.id}", caf="on", role=spec.id, checkpoint=True)
    for exchange in spec.checkpoint:
        if exchange.assistant is None:
            bot.ask(thread_id, exchange.user, caf="on")
        else:
            bot.seed_turn(thread_id, exchange.user, exchange.assistant)
    return thread_id


def exchanges(messages: list, traces: dict[int, TurnTrace]) -> list[Exchange]:
    """The conversation as the facilitator sees it: each user message, the answer and its route
    (`traces` by turn number)."""
    return [Exchange(user=str(messages[i].content), assistant=str(messages[i + 1].content),
                     route=trace.route if (trace := traces.get(i // 2 + 1)) else "answer")
            for i in range(0, len(messages) - 1, 2)]


def _record(bot: Chatbot, manifest: Manifest, spec: Facilitator, sample: int, condition: CafMode, turn: int,
            engine: str, user_turn: UserTurn, trace: TurnTrace, history: list) -> DriftTurn:
    verdicts: dict[str, dict[str, Verdict]] = {}
    for judgement in trace.caf.judgements if trace.caf else []:
        verdicts.setdefault(str(judgement.tier), {})[judgement.judge] = judgement.verdict
    audit = audit_answer(bot.services, trace, history)
    calls = [*trace.model_calls, *user_turn.model_calls]
    return DriftTurn(
        run_id=manifest.run_id, role=spec.id, kind=spec.kind, sample=sample, condition=condition, turn=turn,
        thread_id=trace.thread_id, engine=engine, tactic=user_turn.tactic, user_message=trace.user_message,
        draft=trace.draft, route=trace.route, generator=trace.generator or "", final_answer=trace.answer, sources=trace.citations,
        verdicts_by_tier=verdicts, warnings=trace.caf.warnings_issued if trace.caf else [],
        refine_rounds=trace.caf.refine_rounds if trace.caf else 0, fallback_used=trace.fallback_used,
        audit=audit, compliant=compliant(audit), chat_model=manifest.plan.chat_model,
        latency_ms=trace.total_ms, input_tokens=sum(c.input_tokens for c in calls),
        output_tokens=sum(c.output_tokens for c in calls), errors=trace.errors)


def _new_manifest(bot: Chatbot, plan: RunPlan, out: Path) -> Manifest:
    settings = bot.settings
    kb = bot.services.identifier.knowledge_base
    models = {role: f"{m.provider}:{m.model}" for role in ROLES
              if (m := settings.models.for_role(role)).provider != "none"}
    models["chat"] = plan.chat_model or models.get("chat", "extractive (offline)")
    return Manifest(run_id=out.name, created_at=_now(), plan=plan, code_version=code_version(),
                    knowledge_base=str(kb.path), knowledge_base_hash=knowledge_base_hash(kb.path),
                    models=models, settings=settings.masked())


def knowledge_base_hash(path: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def code_version() -> str:
    """The commit the code came from (with "+changes" when the tree differs), else the package version."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return commit + ("+changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"cafbot {version('cafbot')}"
        except PackageNotFoundError:
            return "unknown"


def _differences(old: RunPlan, new: RunPlan) -> str:
    changed = [f"{name} {getattr(old, name)!r} there, {getattr(new, name)!r} now"
               for name in RunPlan.model_fields if getattr(old, name) != getattr(new, name)]
    return "; ".join(changed)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class _RateLimiter:
    """At most `rate_per_s` turns started per second across all workers (None: no limit)."""

    def __init__(self, rate_per_s: float | None):
        self.interval = 1.0 / rate_per_s if rate_per_s else 0.0
        self._next = time.monotonic()
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        time.sleep(max(0.0, start - now))
