"""Wiring the answer graph. Routers return the next node's name and raise on the impossible."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from app.graph.nodes import AnswerNodes
from app.graph.services import Services
from app.graph.state import ChatInput, ChatState, TurnContext


def after_screen(state: ChatState) -> Literal["identify_sources", "crisis_response", "small_talk", "respond"]:
    route = state["screen"].route
    if route == "answer":
        return "identify_sources"
    if route == "crisis":
        return "crisis_response"
    if route == "small_talk":
        return "small_talk"
    if route == "notice":
        return "respond"
    raise ValueError(f"unknown input route {route!r}")


def after_identify(state: ChatState) -> Literal["enhance_prompt", "clarify"]:
    outcome = state["identification"].outcome
    if outcome == "clear":
        return "enhance_prompt"
    if outcome in ("middling", "none"):
        return "clarify"
    raise ValueError(f"unknown identification outcome {outcome!r}")


def build_graph(services: Services, checkpointer: BaseCheckpointSaver | None = None, *,
                record_turn: Callable[[ChatState, RunnableConfig], dict] | None = None) -> CompiledStateGraph:
    """`record_turn`: a last step that writes the finished turn to the turn log, for hosts that do
    not write it themselves (LangGraph's server; `Chatbot` records after the graph)."""
    nodes = AnswerNodes(services)
    graph = StateGraph(ChatState, context_schema=TurnContext, input_schema=ChatInput)
    for name in ("screen_input", "identify_sources", "enhance_prompt", "generate",
                 "critical_analysis", "crisis_response", "small_talk", "clarify", "respond"):
        graph.add_node(name, getattr(nodes, name))
    graph.add_edge(START, "screen_input")
    graph.add_conditional_edges("screen_input", after_screen)
    graph.add_conditional_edges("identify_sources", after_identify)
    graph.add_edge("enhance_prompt", "generate")
    graph.add_edge("generate", "critical_analysis")
    graph.add_edge("critical_analysis", "respond")
    graph.add_edge("crisis_response", "respond")
    graph.add_edge("small_talk", "respond")
    graph.add_edge("clarify", "respond")
    if record_turn is None:
        graph.add_edge("respond", END)
    else:
        graph.add_node("record_turn", record_turn)
        graph.add_edge("respond", "record_turn")
        graph.add_edge("record_turn", END)
    return graph.compile(checkpointer=checkpointer, name="cafbot")


def mermaid() -> str:
    """The graph's shape as a Mermaid diagram. Drawing runs no node, so no services are built."""
    return build_graph(Services.__new__(Services)).get_graph().draw_mermaid()
