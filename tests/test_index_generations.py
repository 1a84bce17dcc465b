"""`cafbot kb index --rebuild` while other processes answer from the same index: the rebuild
writes a new generation and switches the pointer when it is complete; readers move over at their
next turn and never fail. On a real Chroma server (`chroma run` on loopback) and on a local data
dir, with the product's own command in a second process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.config import Settings
from app.kb import load_knowledge_base
from app.retrieval.chroma_store import IndexDamaged, chroma_client, collection_name
from app.retrieval.generations import pointer_name, read_pointer
from app.retrieval.index import ChunkIndex, rebuild_index
from tests.chroma_server import chroma_server
from tests.conftest import REPO
from tests.fakes import HashingEmbedder
from tests.test_retrieval_index import TOPICS, small_kb

CAFBOT = str(Path(sys.executable).parent / "cafbot")
QUESTIONS = [case["question"] for case in map(json.loads, (REPO / "scenarios" / "retrieval" / "questions.jsonl")
                                                 .read_text(encoding="utf-8").splitlines())
             if case["kind"] == "plain" and case["expected"] != "not_covered"][:10]


@pytest.fixture(scope="module")
def chroma_url():
    with chroma_server() as url:
        yield url


@pytest.fixture(params=["local", "server"])
def retrieval(request) -> dict:
    """Where the index lives: the data dir, or a Chroma server."""
    return {} if request.param == "local" else {"chroma_url": request.getfixturevalue("chroma_url")}


def start_rebuild(tmp_path: Path, **variables: str) -> subprocess.Popen:
    """`cafbot kb index --rebuild` in a process of its own, as an operator (or a deployment's index
    job) runs it."""
    env = {**os.environ, **{f"CAFBOT_{name.upper()}": value for name, value in variables.items()}}
    return subprocess.Popen([CAFBOT, "kb", "index", "--rebuild"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def generations(settings: Settings, kb: Path) -> list[str]:
    base = collection_name(kb)
    return sorted(c.name for c in chroma_client(settings).list_collections()
                  if c.name == base or c.name.startswith(f"{base}-g"))


@pytest.mark.slow
def test_a_rebuild_on_a_chroma_server_leaves_another_replicas_turns_unbroken(
        tmp_path, chroma_url, default_identifier, embedder, knowledge_base):
    from app.graph.services import Services
    from app.retrieval.identify import SourceIdentifier
    from app.session import Chatbot

    settings = Settings(data_dir=tmp_path / "replica", retrieval={"chroma_url": chroma_url})
    index = ChunkIndex(knowledge_base, settings, embedder=embedder)  # its vectors known from the shared index
    index.sync()
    first = index.collection.name
    identifier = SourceIdentifier(knowledge_base, index, settings, examples=default_identifier.examples)
    bot = Chatbot(settings, Services.from_settings(settings, identifier=identifier, embedder=embedder))
    read_from, found = [], []
    rebuild = start_rebuild(tmp_path, data_dir=str(tmp_path / "index-job"), retrieval__chroma_url=chroma_url)
    try:
        for n in range(20):
            if n == 15:  # the last five turns come after the switch
                rebuild.wait(timeout=600)
            trace = bot.ask(bot.new_thread(), QUESTIONS[n % len(QUESTIONS)])  # raises if the turn fails
            assert trace.answer and not trace.errors, trace
            read_from.append(index.collection.name)
            found.append([c.source_id for c in trace.identification.candidates])
            if rebuild.poll() is None:
                time.sleep(1.0)  # turns spread over the whole rebuild, not all at its start
    finally:
        output = rebuild.communicate(timeout=600)[0]
        bot.close()
    assert rebuild.returncode == 0 and "Rebuilt the index of" in output, output
    pointer = read_pointer(chroma_client(settings), knowledge_base.path)
    assert pointer.generation != first and pointer.previous == first
    assert read_from[0] == first and read_from[-5:] == [pointer.generation] * 5, read_from
    assert found[10:] == found[:10]  # the new generation (and BM25 rebuilt from it) finds the same
    assert first in generations(settings, knowledge_base.path)  # kept for replicas still on it


@pytest.mark.slow
def test_a_rebuild_of_a_local_index_while_another_process_reads_it(tmp_path, embedder):
    from app.retrieval import open_identifier

    kb = small_kb(tmp_path / "kb")
    settings = Settings(knowledge_base=kb, data_dir=tmp_path / "data")
    identifier = open_identifier(settings, embedder)
    first = identifier.index.collection.name
    questions = ["how often are clozapine blood tests", "I can't sleep at night", "going back to my job"]
    before = [identifier.identify(q).candidates[0].source_id for q in questions]
    rebuild = start_rebuild(tmp_path, data_dir=str(settings.data_dir), knowledge_base=str(kb))
    turns = 0
    while rebuild.poll() is None or turns < 3:
        identifier.follow_index()  # as every turn starts
        assert [identifier.identify(q).candidates[0].source_id for q in questions] == before
        turns += 1
        time.sleep(0.2)
    output = rebuild.communicate()[0]
    assert rebuild.returncode == 0 and "added 5" in output, output
    assert identifier.index.collection.name == read_pointer(chroma_client(settings), kb).generation != first
    assert [identifier.identify(q).candidates[0].source_id for q in questions] == before


def test_a_reader_whose_generation_was_deleted_reads_the_current_one(tmp_path, retrieval):
    kb = small_kb(tmp_path / "kb")
    settings = Settings(knowledge_base=kb, data_dir=tmp_path / "data", retrieval=retrieval)
    embedder = HashingEmbedder()
    knowledge_base = load_knowledge_base(kb)
    reader = ChunkIndex(knowledge_base, settings, embedder=embedder)
    reader.sync()
    asked = embedder.encode(["clozapine blood tests"])
    first = reader.collection.name
    current = rebuild_index(knowledge_base, settings, embedder).generation
    client = chroma_client(settings)

    client.delete_collection(first)  # by hand: the reader has not started a turn since the rebuild
    assert reader.source_of[reader.dense(asked, 3)[0][0][0]] == "A02"
    assert reader.collection.name == current

    newest = rebuild_index(knowledge_base, settings, embedder).generation
    client.delete_collection(newest)  # the pointer's own: the generation it replaced is complete
    assert not reader.follow_pointer() and reader.collection.name == current
    assert reader.source_of[reader.dense(asked, 3)[0][0][0]] == "A02"

    client.delete_collection(current)  # and now no complete generation is left
    with pytest.raises(IndexDamaged) as raised:
        reader.dense(asked, 3)
    message = str(raised.value)
    assert len(message.splitlines()) == 1 and str(kb) in message, message
    assert "`cafbot kb index --rebuild`" in message and current in message, message

    rebuilt = rebuild_index(knowledge_base, settings, embedder)  # the command the message names
    assert rebuilt.report.added == sorted(TOPICS)
    assert reader.source_of[reader.dense(asked, 3)[0][0][0]] == "A02"
    assert reader.collection.name == rebuilt.generation


def test_a_rebuild_keeps_the_generation_it_replaced_and_drops_older_ones(tmp_path, retrieval):
    kb = small_kb(tmp_path / "kb")
    settings = Settings(knowledge_base=kb, data_dir=tmp_path / "data", retrieval=retrieval)
    embedder, knowledge_base = HashingEmbedder(), load_knowledge_base(kb)
    idle = ChunkIndex(knowledge_base, settings, embedder=embedder)  # a replica with no turn for a while
    idle.sync()
    chroma_client(settings).delete_collection(pointer_name(kb))  # as built before there were generations
    first = rebuild_index(knowledge_base, settings, embedder)
    assert (first.replaced, first.dropped) == (collection_name(kb), [])
    busy = ChunkIndex(knowledge_base, settings, embedder=embedder)  # a replica on the first rebuild
    second = rebuild_index(knowledge_base, settings, embedder)
    assert (second.replaced, second.dropped) == (first.generation, [collection_name(kb)])
    assert generations(settings, kb) == [first.generation, second.generation]
    assert busy.collection.name == first.generation  # still readable until its next turn
    assert busy.dense(embedder.encode(["sleep"]), 2)[0]
    for replica in (idle, busy):
        assert replica.follow_pointer() and replica.collection.name == second.generation
        assert not replica.follow_pointer()  # nothing new: one look at the pointer, no switch
    again = ChunkIndex(knowledge_base, settings, embedder=embedder).sync()  # `cafbot kb index`
    assert (again.unchanged, again.embedded_chunks) == (len(TOPICS), 0)
    assert read_pointer(chroma_client(settings), kb).generation == second.generation
