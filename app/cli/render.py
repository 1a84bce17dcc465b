"""How answers, sources and traces look in the terminal."""

from __future__ import annotations

from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from app.cli.common import console
from app.core.records import CafReport, TurnTrace


def show_answer(trace: TurnTrace) -> None:
    style = "red" if trace.route == "crisis" else "green"
    console.print(Panel(Markdown(trace.answer), title="cafbot", border_style=style, title_align="left"))
    if trace.citations:
        sources = trace.identification.candidates if trace.identification else []
        titles = {c.source_id: c.title for c in sources}
        cited = ", ".join(f"[{c}] {titles.get(c, '')}".strip() for c in trace.citations)
        console.print(f"[dim]Sources: {escape(cited)}[/]", highlight=False)


def show_sources(trace: TurnTrace | None) -> None:
    if trace is None or trace.identification is None:
        console.print("[dim]No sources were looked up for the last turn.[/]")
        return
    table = Table(title=f"Sources considered (outcome: {escape(trace.identification.outcome)})")
    for column in ("id", "title", "confidence", "part", "in prompt"):
        table.add_column(column)
    for c in trace.identification.candidates:
        table.add_row(escape(c.source_id), escape(c.title), f"{c.confidence:.2f}", escape(c.part or ""),
                      "yes" if c.source_id in trace.prompt_sources else "")
    console.print(table)


def show_trace(trace: TurnTrace | None) -> None:
    if trace is None:
        console.print("[dim]No turn yet.[/]")
        return
    table = Table(title=escape(f"Turn {trace.turn}: route {trace.route}, generator {trace.generator}, "
                               f"{trace.total_ms:.0f} ms"))
    table.add_column("step")
    table.add_column("ms", justify="right")
    table.add_column("detail")
    for node in trace.nodes:
        table.add_row(escape(node.node), f"{node.latency_ms:.1f}", escape(node.note))
    for call in trace.model_calls:
        detail = f"{call.purpose} {call.input_tokens}+{call.output_tokens} tokens"
        table.add_row(escape(f"  model {call.role} ({call.model})"), f"{call.latency_ms:.1f}",
                      escape(detail + ("" if call.ok else f" FAILED: {call.error}")))
    console.print(table)
    if trace.caf:
        console.print(Panel(escape(_caf_summary(trace.caf)), title="Critical Analysis Filter",
                            title_align="left"))
    for line in [*trace.errors, *(f"dropped source {s}" for s in trace.dropped_sources)]:
        console.print(f"[yellow]{escape(line)}[/]", highlight=False)


def _caf_summary(report: CafReport) -> str:
    lines = [f"final: {report.final_verdict}  refinement rounds: {report.refine_rounds}  "
             f"fallback: {report.fallback_used}  LLM judge calls: {report.llm_calls}  "
             f"{report.latency_ms:.0f} ms"]
    for j in report.judgements:
        failed = f" FAILED ({j.error})" if j.error else ""
        lines.append(f"tier {j.tier} {j.judge}: {j.verdict}{failed} {j.reason}".rstrip())
    lines += [f"warning for next turn: {w}" for w in report.warnings_issued]
    return "\n".join(lines)
