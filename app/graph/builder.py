"""Wiring the answer graph. Routers return the next node's name and raise on the impossible."""

from __future__ import annotations

from typing import Literal

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


def build_graph(services: Services, checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
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
    graph.add_edge("respond", END)
    return graph.compile(checkpointer=checkpointer, name="cafbot")


def mermaid() -> str:
    """The graph's shape as a Mermaid diagram. Drawing runs no node, so no services are built."""
    return build_graph(Services.__new__(Services)).get_graph().draw_mermaid()


def make_graph() -> CompiledStateGraph:
    """For `langgraph.json`: the graph on the effective configuration. LangGraph's own server
    supplies the checkpointer."""
    from app.core.config import Settings

    return build_graph(Services.from_settings(Settings()))
