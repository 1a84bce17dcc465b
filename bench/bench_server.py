"""A warm turn through LangGraph's own server against the same turn in process, on one machine in
one run.

Run: .venv/bin/python bench/bench_server.py [--turns 20] [--smallest]

Starts `langgraph dev` (the repository's langgraph.json, the offline default, strict checkpoint
reading) on a free loopback port with its data in a temporary folder, and asks one conversation the
same messages through its HTTP API and through `Chatbot.ask`. Both sides are warm: services built,
every source's sentences embedded, the first turn not counted.

- "wait": from sending a message to holding its answer; on the server, HTTP, the server's run queue
  and its checkpoint writes included.
- "graph": the turn's own nodes, from its trace (`trace.total_ms`), the same work on both sides.
- on a server this script starts, its own account of each run (from its log): the time the run
  waited in its queue, and the time it ran (the graph, its checkpoints and the turn log).
`--smallest` counts two turns: tests/test_langgraph_server.py runs it so, on its own server.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from app.core.config import REPO_ROOT, Settings
from app.core.embeddings import Embedder
from app.core.stats import percentile
from app.graph.services import Services
from app.retrieval import open_identifier
from app.session import Chatbot
from tests.servers import free_port

# A conversation with follow-ups, so that both sides read each message with the ones before it.
MESSAGES = [
    "What is clozapine?",
    "is it safe with alcohol?",
    "What are negative symptoms?",
    "how can they be treated?",
    "What is family intervention?",
    "how long does it go on for",
    "is it free?",
]
ASSISTANT = "cafbot"  # langgraph.json's graph id
LOG_NAME = "langgraph-dev.log"  # in the server's working directory
SMALLEST = 2  # counted turns with --smallest


class ServerFailed(RuntimeError):
    """`langgraph dev` did not start, or a run on it failed."""


def langgraph_command() -> Path | None:
    """The `langgraph` command beside this Python, when langgraph-cli is installed with its
    in-memory server (the `dev` extra)."""
    command = Path(sys.executable).parent / "langgraph"
    try:
        import langgraph_api  # noqa: F401
    except ImportError:
        return None
    return command if command.exists() else None


@contextmanager
def langgraph_server(data_dir: Path, workdir: Path, *, start_timeout_s: float = 120) -> Iterator[str]:
    """`langgraph dev` on a free loopback port, its working directory (where it keeps its own
    state) `workdir` and cafbot's data in `data_dir`; yields its address once it answers. It is
    stopped, with its process group, on exit."""
    command = langgraph_command()
    if command is None:
        raise ServerFailed("langgraph-cli is not installed: pip install -e '.[dev]'")
    port = free_port()
    env = {**os.environ, "CAFBOT_DATA_DIR": str(data_dir),
           "LANGGRAPH_STRICT_MSGPACK": "true",  # checkpoints rebuild only registered types
           "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false",  # no calls out
           "LOG_JSON": "true"}  # its log as JSON lines, for `server_runs`
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / LOG_NAME
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [str(command), "dev", "--config", str(REPO_ROOT / "langgraph.json"), "--host", "127.0.0.1",
             "--port", str(port), "--no-browser", "--no-reload"],
            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout_s
        while not _answers(url):
            if server.poll() is not None or time.monotonic() > deadline:
                raise ServerFailed(f"langgraph dev did not start:\n{_tail(log_path)}")
            time.sleep(0.5)
        yield url
    finally:
        _stop(server)


def server_runs(log_path: Path) -> list[dict[str, float]]:
    """Each finished run as the server logs it, in order: milliseconds in its queue and running."""
    runs = []
    for line in log_path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line) if line.startswith("{") else {}
        except ValueError:
            continue
        if entry.get("event") == "Background run succeeded":
            runs.append({"queue": float(entry["run_wait_time_ms"]), "run": float(entry["run_exec_ms"])})
    return runs


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def ask_server(client: httpx.Client, thread_id: str, payload: dict[str, Any], *, timeout_s: float = 60,
               **run: Any) -> dict[str, Any]:
    """One turn through the server's HTTP API (a run that waits for its end): the thread's state
    after it. `payload`: the graph's input, `{"messages": […]}` or `{"user_input": …}`."""
    response = client.post(f"/threads/{thread_id}/runs/wait", json={
        "assistant_id": ASSISTANT, "input": payload, **run}, timeout=timeout_s)
    response.raise_for_status()
    values = response.json()
    if "__error__" in values or "trace" not in values:
        raise ServerFailed(f"the run failed: {json.dumps(values)[:2000]}")
    return values


def new_thread(client: httpx.Client) -> str:
    response = client.post("/threads", json={})
    response.raise_for_status()
    return response.json()["thread_id"]


def compare(turns: int, *, url: str | None = None, embedder: Embedder | None = None,
            index: Path | None = None) -> dict[str, Any]:
    """`turns` messages of one conversation on each side, after one not counted, the two sides
    taking turns so that both meet the same load on the machine. `url`: a server already running
    (else one is started); `embedder`, `index`: ones already built, for this side (and a started
    server) to reuse."""
    messages = [MESSAGES[i % len(MESSAGES)] for i in range(turns + 1)]
    rows: dict[str, list[dict[str, Any]]] = {"in_process": [], "server": []}
    log_path = None
    with tempfile.TemporaryDirectory(prefix="cafbot-bench-server-") as tmp, ExitStack() as stack:
        settings = Settings(data_dir=Path(tmp) / "in-process")
        if index is not None:
            shutil.copytree(index, settings.index_dir)
        embedder = embedder or Embedder()
        identifier = open_identifier(settings, embedder)
        if url is None:
            served = Path(tmp) / "server"
            shutil.copytree(settings.index_dir, served / "data" / "index")  # built once, read by both
            url = stack.enter_context(langgraph_server(served / "data", served / "work"))
            log_path = served / "work" / LOG_NAME
        client = stack.enter_context(httpx.Client(base_url=url))
        # The server builds its services as it starts, while this side builds its own.
        services = Services.from_settings(settings, identifier=identifier, embedder=embedder)
        services.warm_up()
        bot = stack.enter_context(Chatbot(settings, services))
        local_thread, server_thread = bot.new_thread(label="bench"), new_thread(client)
        for i, message in enumerate(messages):
            started = time.perf_counter()
            trace = bot.ask(local_thread, message).model_dump(mode="json")
            rows["in_process"].append({"wait": (time.perf_counter() - started) * 1000, "trace": trace})
            started = time.perf_counter()
            values = ask_server(client, server_thread, {"messages": [{"role": "user", "content": message}]},
                                timeout_s=600 if i == 0 else 60)  # the first may wait for the build
            rows["server"].append({"wait": (time.perf_counter() - started) * 1000, "trace": values["trace"]})
        runs = server_runs(log_path)[1:] if log_path else []
    return {"turns": turns, **{side: side_rows[1:] for side, side_rows in rows.items()}, "server_runs": runs}


def table(result: dict[str, Any]) -> list[tuple[str, float | None, float]]:
    """(measure, in-process p50 ms or None, server p50 ms). The in-process side has no queue, and
    its whole wait is its run."""
    def p50(rows: list[dict[str, Any]], measure: str) -> float:
        return percentile([row[measure] for row in rows], 50)

    sides = {side: [{"wait": r["wait"], "graph": sum(n["latency_ms"] for n in r["trace"]["nodes"])}
                    for r in result[side]] for side in ("in_process", "server")}
    rows: list[tuple[str, float | None, float]] = [
        ("wait", p50(sides["in_process"], "wait"), p50(sides["server"], "wait"))]
    if runs := result["server_runs"]:
        rows += [("  in the run queue", None, p50(runs, "queue")),
                 ("  running", p50(sides["in_process"], "wait"), p50(runs, "run"))]
    return [*rows, ("graph", p50(sides["in_process"], "graph"), p50(sides["server"], "graph"))]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--smallest", action="store_true", help=f"{SMALLEST} counted turns, to check the script")
    parser.add_argument("--json", type=Path, help="write every turn's figures here")
    args = parser.parse_args(argv)
    result = compare(SMALLEST if args.smallest else args.turns)
    print(f"{'p50 (ms)':18} {'in process':>11} {'server':>9} {'ratio':>7}")
    for measure, local, served in table(result):
        if local is None:
            print(f"{measure:18} {'':>11} {served:9.1f}")
        else:
            print(f"{measure:18} {local:11.1f} {served:9.1f} {served / local:6.1f}x")
    waits = [r["wait"] for r in result["server"]]
    print(f"\n{result['turns']} warm turns each; server wait p95 {percentile(waits, 95):.0f} ms, "
          f"mean {statistics.mean(waits):.0f} ms.")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


if __name__ == "__main__":
    try:
        main()
    except ServerFailed as error:
        sys.exit(str(error))
