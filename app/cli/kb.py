"""`cafbot kb check | ingest | index | identify | eval`: the knowledge base and its retrieval."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from app.cli.common import console, friendly_errors, load_settings
from app.core.config import REPO_ROOT, Settings

if TYPE_CHECKING:  # loading the model is slow: imported where it is used
    from app.core.embeddings import Embedder

cli = typer.Typer(no_args_is_help=True)

DEFAULT_QUESTIONS = REPO_ROOT / "scenarios" / "retrieval" / "questions.jsonl"
KbOption = Annotated[Path | None, typer.Option("--kb", help="Knowledge-base folder (default: from the configuration).")]


def _settings(kb: Path | None) -> Settings:
    return load_settings(**({"knowledge_base": kb} if kb else {}))


@cli.command()
@friendly_errors
def check(path: Annotated[Path | None, typer.Argument(help="Knowledge-base folder (default: from the configuration).")] = None) -> None:
    """Validate a knowledge base and print its table of contents."""
    from app.kb import load_knowledge_base

    settings = load_settings()
    kb = load_knowledge_base(path or settings.knowledge_base)
    table = Table(title=f"Knowledge base {escape(str(kb.path))}", title_justify="left")
    for column, justify in (("id", "left"), ("title", "left"), ("words", "right"), ("keywords", "right"), ("review", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for s in kb:
        table.add_row(escape(s.id), escape(s.title), str(len(s.body.split())), str(len(s.keywords)),
                      "[yellow]needs review[/]" if s.needs_review else "")
    console.print(table)
    review = [s.id for s in kb if s.needs_review]
    words = sum(len(s.body.split()) for s in kb)
    if review:
        console.print(f"[yellow]{len(review)} drafted summaries to review:[/] {escape(', '.join(review))}")
    from app.core.embeddings import Embedder

    embedder = Embedder()  # one model load for both checks below
    if report_quarantined(kb) | report_unvetted_cards(kb, settings, embedder):
        raise typer.Exit(1)
    report_unfound_questions(settings.model_copy(update={"knowledge_base": kb.path}), embedder)
    report_request_kinds(kb, embedder)
    with_examples = {e.source for e in kb.examples}
    without = [s.id for s in kb if s.id not in with_examples]
    if not kb.examples:
        console.print("[yellow]No example messages[/] (examples/): retrieval alone finds every source")
    elif without:
        console.print(f"[yellow]{len(without)} sources have no example messages[/] (examples/): "
                      f"{escape(', '.join(without))}; retrieval alone finds them")
    examples = sum(len(e.messages) for e in kb.examples)
    console.print(f"[green]OK[/]: {len(kb)} sources, {words:,} words, {len(kb.cards)} answer cards, "
                  f"{examples:,} example messages.")


def report_request_kinds(kb, embedder: Embedder) -> None:
    """Per kind of request about one's own case the input screen reads, the boundary cards that
    answer it; for a kind without one, the safety fact its boundary reply will give instead (the
    sources' sentence for it, else the profile's), or that it gives none."""
    from app.core.profile import load_profile
    from app.core.records import SourceText
    from app.generation.safety_facts import SourcedFacts
    from judges.local.resources import Resources

    kinds = Resources(embedder).request_kind.kinds
    answering = {kind: [c.id for c in kb.cards if kind in c.requests] for kind in kinds}
    sourced = SourcedFacts([(s.id, SourceText.of(s).text) for s in kb], lambda texts: embedder.encode(list(texts)))
    general = load_profile(kb.path).safety_fact
    table = Table(title="Requests about one's own case, and the cards that answer them", title_justify="left")
    table.add_column("kind of request")
    table.add_column("answer cards")
    table.add_column("without a card, the safety fact given")
    for kind, cards in answering.items():
        fact = "" if cards else (sourced.fact_for(kind) or general or "[yellow]none[/]")
        table.add_row(escape(kind), escape(", ".join(cards)) if cards else "[yellow]none[/]",
                      fact if fact.startswith("[yellow]") else escape(fact))
    console.print(table)
    if missing := [kind for kind, cards in answering.items() if not cards]:
        console.print(f"[yellow]{len(missing)} kinds of request have no answer card[/] ({escape(', '.join(missing))}): "
                      "their boundary reply says what the bot cannot do, the safety fact above, and who to ask")


def report_unvetted_cards(kb, settings: Settings, embedder: Embedder) -> bool:
    """Judge every answer card with the filter's local checks; print each failure; True if any."""
    if not kb.cards:
        return False
    import hashlib

    import judges
    from app.kb.vetting import vet_cards
    from app.prompts import reply
    from judges.filter import CriticalAnalysisFilter
    from judges.local.resources import Resources

    package = Path(judges.__file__).parent
    checks = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(package.rglob("*"))
                                     if p.suffix in (".py", ".yaml", ".json", ".joblib"))).hexdigest()
    with console.status(f"Checking {len(kb.cards)} answer cards with the filter's local checks…"):
        resources = Resources.from_settings(settings, embedder if settings.local_embeddings else None)
        caf = CriticalAnalysisFilter.from_settings(settings, resources, refiner=None)
        problems = vet_cards(kb, caf, reply("verification_reminder"), checks_version=checks,
                             cache=settings.data_dir / "vetted_cards.json")
    for line in problems:
        console.print(f"[red]card rejected[/] {escape(line)}", highlight=False)
    if problems:
        console.print("[red]Answer cards that fail the filter are never delivered[/]: keep each "
                      "sentence close to the source it cites.", highlight=False)
    return bool(problems)


def report_unfound_questions(settings: Settings, embedder: Embedder) -> int:
    """Each source's `questions:` are offered as follow-up suggestions and asked verbatim when
    clicked, so each must find its own source among the first three. Prints those that do not
    (a warning: reword the question or the source); returns how many."""
    from app.retrieval import open_identifier

    with console.status("Checking that each source's questions find it…"):
        identifier = open_identifier(settings, embedder, show_progress=False)
        unfound = []
        for source in identifier.knowledge_base:
            for question in source.questions:
                found = identifier.identify(question)
                top = [c.source_id for c in found.candidates[:3]] if found.outcome != "none" else []
                if source.id not in top:
                    unfound.append(f"{source.id}: {question!r} finds {', '.join(top) or 'nothing'}")
            if not source.questions:
                unfound.append(f"{source.id}: no questions: (no follow-up suggestions lead here)")
    for line in unfound:
        console.print(f"[yellow]question[/] {escape(line)}", highlight=False)
    return len(unfound)


def report_quarantined(kb) -> bool:
    """Print each quarantined source's flagged sentences (file:line: reason); True if any."""
    if not kb.quarantined:
        return False
    for quarantined in kb.quarantined:
        for line in quarantined.lines():
            console.print(f"[red]quarantined[/] {escape(line)}", highlight=False)
    console.print(f"[red]{len(kb.quarantined)} source(s) quarantined[/]: they are not indexed or shown to any "
                  "model. Fix the text, or after review list each flagged sentence under "
                  "approved_sentences: in the source's front matter.", highlight=False)
    return True


@cli.command()
@friendly_errors
def ingest(
    path: Annotated[Path, typer.Argument(help="Folder of Markdown (.md) or plain-text (.txt) documents.")],
    out: Annotated[Path, typer.Option(help="Where to write the sources.")] = Path("knowledge_base_ingested"),
    prefix: Annotated[str, typer.Option(help="Id prefix: S gives S01, S02, ...")] = "S",
    force: Annotated[bool, typer.Option(help="Write even if OUT already holds Markdown files.")] = False,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Draft summaries offline even if a model is configured.")] = False,
) -> None:
    """Turn a folder of documents into knowledge-base sources (summaries drafted for review)."""
    from app.core.models import helper_model
    from app.kb import load_knowledge_base
    from app.kb.ingest import ingest as ingest_folder
    from app.kb.ingest import write_sources

    client = None if no_llm else helper_model(load_settings())
    with console.status("Reading and drafting…"):
        sources = ingest_folder(path, client=client, id_prefix=prefix)
    written = write_sources(sources, out, force=force)
    table = Table(title=f"{len(written)} sources written to {escape(str(out))}", title_justify="left")
    for column in ("id", "title", "file", "summary"):
        table.add_column(column)
    for source, file in zip(sources, written, strict=True):
        table.add_row(escape(source.id), escape(source.title), escape(file.name),
                      "drafted: review" if source.needs_review else "kept")
    console.print(table)
    drafted = "the configured model" if client else "the first sentences"
    console.print(f"Summaries drafted from {drafted} are marked needs_review: true. "
                  f"Check with: cafbot kb check {escape(str(out))}")
    report_quarantined(load_knowledge_base(out))


@cli.command()
@friendly_errors
def index(
    kb: KbOption = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Build this knowledge base's index afresh and switch readers to it when complete (repairs a damaged index; running apps move over at their next turn).")] = False,
) -> None:
    """Build or update the retrieval index (only changed sources are re-embedded)."""
    from app.core.embeddings import Embedder
    from app.kb import load_knowledge_base
    from app.retrieval import open_identifier
    from app.retrieval.chroma_store import IndexDamaged, remove_local_index
    from app.retrieval.index import rebuild_index

    settings = _settings(kb)
    if rebuild:
        knowledge_base = load_knowledge_base(settings.knowledge_base)  # a broken one: say so first
        embedder = Embedder()
        try:
            rebuilt = rebuild_index(knowledge_base, settings, embedder, show_progress=True)
        except IndexDamaged:
            if settings.retrieval.chroma_url:
                raise  # a server's storage is the server's to repair
            # The local index cannot even be opened (its files are damaged): start from an empty folder.
            console.print(escape(remove_local_index(settings)), highlight=False)
            rebuilt = rebuild_index(knowledge_base, settings, embedder, show_progress=True)
        console.print(escape(rebuilt.summary(settings.knowledge_base)), highlight=False)
        report = rebuilt.report
    else:
        report = open_identifier(settings, Embedder(), show_progress=True).index_report
    where = escape(str(settings.retrieval.chroma_url or settings.index_dir))
    console.print(f"Index for {escape(str(settings.knowledge_base))} at {where}: {report.chunks} chunks; "
                  f"added {len(report.added)}, updated {len(report.updated)}, removed {len(report.removed)}, "
                  f"unchanged {report.unchanged} sources ({report.embedded_chunks} chunks embedded in "
                  f"{report.seconds:.1f} s).")


@cli.command()
@friendly_errors
def identify(question: Annotated[str, typer.Argument(help="A question, in quotes.")], kb: KbOption = None) -> None:
    """Show which sources a question finds, with confidences and the outcome."""
    from app.core.embeddings import Embedder
    from app.retrieval import open_identifier

    found = open_identifier(_settings(kb), Embedder()).identify(question)
    console.print(f"outcome: [bold]{found.outcome}[/]  parts: {escape(str(found.parts))}  "
                  f"({found.latency_ms:.1f} ms)")
    for c in found.candidates:
        console.print(f"  {escape(c.source_id)}  {c.confidence:.2f}  {escape(c.title)}"
                      + (f"  [dim]← {escape(c.part)}[/]" if c.part else ""))


@cli.command("eval")
@friendly_errors
def evaluate(
    file: Annotated[Path, typer.Argument(help="Questions, one JSON object a line.")] = DEFAULT_QUESTIONS,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the metrics as JSON here.")] = None,
    failures: Annotated[bool, typer.Option(help="List the questions that missed.")] = False,
    kb: KbOption = None,
) -> None:
    """Recall@1, recall@3, MRR, not-covered accuracy and latency of source identification."""
    from app.core.embeddings import Embedder
    from app.retrieval import open_identifier
    from app.retrieval.evaluate import load_questions, report_json, run, summarise

    questions = load_questions(file)
    identifier = open_identifier(_settings(kb), Embedder(), show_progress=True)
    results = run(identifier, questions)
    report = summarise(results)
    console.print(f"{escape(str(file))}: {report.n} questions, {report.n_covered} covered, "
                  f"{report.n_not_covered} not covered", highlight=False)
    table = Table(title="Retrieval evaluation", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name in ("recall_at_1", "recall_at_3", "mrr", "not_covered_accuracy", "covered_answered_none"):
        table.add_row(name, f"{getattr(report, name):.3f}")
    table.add_row("latency_ms_p50", f"{report.latency_ms_p50:.1f}")
    table.add_row("latency_ms_p95", f"{report.latency_ms_p95:.1f}")
    console.print(table)
    kinds = Table(title="By kind", title_justify="left")
    for column in ("kind", "n", "recall@1", "recall@3", "MRR", "not covered"):
        kinds.add_column(column, justify="left" if column == "kind" else "right")
    for kind, m in report.by_kind.items():
        covered, uncovered = m["n_covered"] > 0, m["n_not_covered"] > 0
        kinds.add_row(escape(kind), str(int(m["n"])), *(f"{m[k]:.2f}" if covered else "-"
                                                for k in ("recall_at_1", "recall_at_3", "mrr")),
                      f"{m['not_covered_accuracy']:.2f}" if uncovered else "-")
    console.print(kinds)
    if failures:
        for r in results:
            hit = r.outcome == "none" if r.expected == "not_covered" else bool(set(r.expected) & set(r.ranked[:3]))
            if not hit:
                console.print("[red]miss[/] " + escape(f"{r.id} ({r.kind}) expected {r.expected}, got "
                                                         f"{r.outcome} {r.ranked}: {r.question}"),
                              highlight=False)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(report_json(report) + "\n", encoding="utf-8")
        console.print(f"Metrics written to {escape(str(json_out))}")
