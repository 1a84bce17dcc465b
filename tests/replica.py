"""One replica of the product for the replica tests: a `Chatbot` in its own process, with its own
data dir, on the Postgres (and index) the test gives it, driven by JSON lines on stdin:
{"new": label} -> {"thread": id}; {"ask": [thread, text]} -> {"turn", "answer"} or {"error", "message"}.
It prints {"ready": true} once it serves."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import DEFAULT_KNOWLEDGE_BASE, Settings
from app.core.errors import CafbotError
from app.graph.services import Services
from app.kb.loader import load_knowledge_base
from app.session import Chatbot
from tests.fakes import HashingEmbedder, KeywordIdentifier


def main() -> None:
    data_dir, postgres_url, store_url, lock_timeout = sys.argv[1:5]
    settings = Settings(data_dir=Path(data_dir), store_url=store_url, turn_lock_timeout_s=float(lock_timeout),
                        checkpointer={"kind": "postgres", "postgres_url": postgres_url})
    services = Services.from_settings(settings, embedder=HashingEmbedder(),
                                      identifier=KeywordIdentifier(load_knowledge_base(DEFAULT_KNOWLEDGE_BASE)))
    with Chatbot(settings, services) as bot:
        reply({"ready": True})
        for line in sys.stdin:
            command = json.loads(line)
            try:
                if "new" in command:
                    reply({"thread": bot.new_thread(command["new"])})
                else:
                    trace = bot.ask(*command["ask"])
                    reply({"turn": trace.turn, "answer": trace.answer})
            except CafbotError as error:
                reply({"error": type(error).__name__, "message": str(error)})


def reply(message: dict) -> None:
    print(json.dumps(message), flush=True)


if __name__ == "__main__":
    main()
