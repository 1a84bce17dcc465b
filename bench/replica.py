"""One replica of the product in its own process: a `Chatbot` on the settings it is given, driven
by JSON lines on stdin. The replica tests and bench_replicas.py start several at once.

    python bench/replica.py '{"settings": {...}, "fast": false}'

`settings`: keyword arguments for `Settings` (data_dir, store_url, checkpointer, retrieval, ...);
`fast`: the hashing embedder and keyword identifier instead of MiniLM and the index. Commands:
{"new": label} -> {"thread": id}; {"ask": [thread, text]} -> {"turn", "answer"} or {"error",
"message"}; {"run": turns} -> {"turns", "errors", "seconds"} (turns on a conversation of its own).
It prints {"ready": true} once it serves.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import DEFAULT_KNOWLEDGE_BASE, Settings
from app.core.errors import CafbotError
from app.graph.services import Services
from app.kb.loader import load_knowledge_base
from app.session import Chatbot

QUESTIONS = ["What helps with sleep?", "What are negative symptoms?", "How can family members help?",
             "What is clozapine?", "What are the early warning signs of relapse?"]


def main() -> None:
    config = json.loads(sys.argv[1])
    settings = Settings(**config["settings"])
    if config.get("fast"):
        from tests.fakes import HashingEmbedder, KeywordIdentifier

        services = Services.from_settings(settings, embedder=HashingEmbedder(),
                                          identifier=KeywordIdentifier(load_knowledge_base(DEFAULT_KNOWLEDGE_BASE)))
    else:
        services = Services.from_settings(settings)
        services.warm_up()
    with Chatbot(settings, services) as bot:
        reply({"ready": True})
        for line in sys.stdin:
            command = json.loads(line)
            try:
                if "new" in command:
                    reply({"thread": bot.new_thread(command["new"])})
                elif "run" in command:
                    reply(run(bot, command["run"]))
                else:
                    trace = bot.ask(*command["ask"])
                    reply({"turn": trace.turn, "answer": trace.answer})
            except CafbotError as error:
                reply({"error": type(error).__name__, "message": str(error)})


def run(bot: Chatbot, turns: int) -> dict:
    thread, errors = bot.new_thread("bench"), 0
    started = time.perf_counter()
    for n in range(turns):
        try:
            bot.ask(thread, QUESTIONS[n % len(QUESTIONS)])
        except CafbotError:
            errors += 1
    return {"turns": turns, "errors": errors, "seconds": time.perf_counter() - started}


def reply(message: dict) -> None:
    print(json.dumps(message), flush=True)


class Replica:
    """The other side: a replica process, spoken to one JSON line at a time."""

    def __init__(self, settings: dict, *, fast: bool = False):
        import subprocess

        self.process = subprocess.Popen(
            [sys.executable, __file__, json.dumps({"settings": settings, "fast": fast}, default=str)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_ready(self) -> None:
        assert self.read() == {"ready": True}

    def send(self, **command) -> None:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def ask(self, thread: str, text: str) -> dict:
        self.send(ask=[thread, text])
        return self.read()

    def new_thread(self, label: str = "") -> str:
        self.send(new=label)
        return self.read()["thread"]

    def read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=30)
            raise RuntimeError(f"the replica exited ({self.process.returncode}): {self.process.stderr.read()[-3000:]}")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


if __name__ == "__main__":
    main()
