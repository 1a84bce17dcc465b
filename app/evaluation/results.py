"""The published figures: docs/results.md and the README's short table, written from the evaluation
files in docs/results/ (each the `--json` output of the command shown beside it), never by hand.
`make results` runs the commands, then `cafbot eval report` writes the pages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.core.config import REPO_ROOT
from app.core.errors import CafbotError

RESULTS_DIR = REPO_ROOT / "docs" / "results"
RESULTS_PAGE = REPO_ROOT / "docs" / "results.md"
README = REPO_ROOT / "README.md"
FIGURES_START = "<!-- figures: written by `make results` from docs/results/*.json; do not edit by hand -->"
FIGURES_END = "<!-- /figures -->"
CONTEXT_HOLDOUT = "scenarios/screen/in_context/holdout"

Kind = Literal["retrieval", "screen", "judges", "answers"]


@dataclass(frozen=True)
class Evaluation:
    name: str  # docs/results/NAME.json
    title: str
    kind: Kind
    command: str  # without `--json`, as a reader runs it
    split: Literal["dev", "test", "holdout"]


EVALUATIONS = (
    Evaluation("retrieval_dev", "Source identification, questions", "retrieval",
               "cafbot kb eval scenarios/retrieval/questions.jsonl", "dev"),
    Evaluation("retrieval_holdout", "Source identification, holdout", "retrieval",
               "cafbot kb eval scenarios/retrieval/holdout.jsonl", "holdout"),
    Evaluation("screen_dev", "Input screen, medicines and means", "screen",
               "cafbot judges eval scenarios/screen/dev --tiers 0", "dev"),
    Evaluation("screen_holdout", "Input screen, single messages", "screen",
               "cafbot judges eval scenarios/screen/holdout --tiers 0", "holdout"),
    Evaluation("screen_context_holdout", "Input screen, conversations", "screen",
               f"cafbot judges eval {CONTEXT_HOLDOUT} --tiers 0", "holdout"),
    Evaluation("judges_test", "Draft judges, tier 0, test", "judges",
               "cafbot judges eval scenarios/judges/test --tiers 0", "test"),
    Evaluation("judges_holdout", "Draft judges, tier 0, holdout", "judges",
               "cafbot judges eval scenarios/judges/holdout --tiers 0", "holdout"),
    *(Evaluation(f"answers_{stem.replace('-', '_')}", f"Answers, {stem}", "answers",
                 f"cafbot eval answers scenarios/answers/{stem}.jsonl", "holdout" if "holdout" in stem else "dev")
      for stem in ("dev-mixed-questions", "dev-mixed-questions-detailed", "dev-mid-conversation",
                   "dev-own-case-vs-general", "dev-own-case-requests", "dev-requests-in-conversation",
                   "holdout-mixed-questions", "holdout-mixed-questions-from-sources",
                   "holdout-requests-in-conversation")),
)


def load(name: str, folder: Path = RESULTS_DIR) -> dict[str, Any]:
    path = folder / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CafbotError(f"{path}: no evaluation file; run `make results`") from None
    except json.JSONDecodeError as error:
        raise CafbotError(f"{path}: not valid JSON ({error.msg}, line {error.lineno}); run `make results`") from None


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _row(ev: Evaluation, d: dict[str, Any]) -> list[str]:
    if ev.kind == "retrieval":
        return [str(d["n"]), f"{d['recall_at_1']:.3f}", f"{d['recall_at_3']:.3f}", f"{d['mrr']:.3f}",
                f"{d['not_covered_accuracy']:.3f}"]
    if ev.kind == "screen":
        return [str(d["n"]), f"{d['crisis_recall']:.3f}", _pct(d["crisis_false_positive_rate"]), f"{d['route_accuracy']:.3f}"]
    if ev.kind == "judges":
        return [str(d["n"]), f"{d['flag_recall']:.3f}", f"{d['flag_precision']:.3f}", f"{d['accuracy']:.3f}"]
    return [str(d["n"]), f"{d['fully_correct']:.3f}", f"{d['key_point_coverage']:.3f}", f"{d['route_accuracy']:.3f}",
            f"{d['citation_hit_rate']:.3f}", str(d["must_not_hits"])]


_HEADERS: dict[Kind, list[str]] = {
    "retrieval": ["questions", "recall@1", "recall@3", "MRR", "not covered right"],
    "screen": ["messages", "crisis recall", "false alarms", "right route"],
    "judges": ["drafts", "flag recall", "flag precision", "accuracy"],
    "answers": ["questions", "fully correct", "key points", "right route", "citation hit", "must-not hits"],
}
_ABOUT: dict[Kind, str] = {
    "retrieval": "Which source a question is answered from (offline: hybrid retrieval and the example "
                 "classifier). Recall@k: the expected source among the first k.",
    "screen": "What the input screen decides before anything else, offline (tier 0): crisis recall is the "
              "share of crises that get the crisis reply; false alarms, the share of ordinary messages that do.",
    "judges": "The filter's local checks on drafts with a known verdict (tier 0, no LLM): did they flag "
              "what should be flagged, and only that.",
    "answers": "Whole turns on the offline default against answer keys: a question is fully correct when "
               "it takes the right route, cites the right source and covers every key point, with no "
               "must-not phrase.",
}


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers), *("| " + " | ".join(r) + " |" for r in rows)]


def _context_by_file(d: dict[str, Any]) -> list[str]:
    """The conversation holdout per file: crises in context, danger going on after a crisis, means,
    ordinary conversations."""
    from judges.evaluate import ScenarioResult, summarise

    results = [ScenarioResult.model_validate(r) for r in d["per_scenario"]]
    rows = []
    for path in sorted((REPO_ROOT / CONTEXT_HOLDOUT).glob("*.jsonl")):
        ids = {json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
        found = [r for r in results if r.id in ids]
        if not found:
            continue
        report = summarise(found)
        crises, ordinary = (any(r.expected == "crisis" for r in found), any(r.expected != "crisis" for r in found))
        rows.append([f"`{path.name}`", str(report.n), f"{report.crisis_recall:.3f}" if crises else "–",
                     _pct(report.crisis_false_positive_rate) if ordinary else "–", f"{report.route_accuracy:.3f}"])
    return _table(["file", "messages", "crisis recall", "false alarms", "right route"], rows)


def results_page(folder: Path = RESULTS_DIR) -> str:
    lines = ["# Results", "",
             "Every figure here is read from the evaluation file beside it in `docs/results/`, which is "
             "the `--json` output of the command shown. `make results` runs them all and writes this "
             "page; `tests/test_results.py` fails when a figure here differs from its file. Holdout "
             "sets are never tuned on.", ""]
    for kind in ("answers", "screen", "retrieval", "judges"):
        chosen = [ev for ev in EVALUATIONS if ev.kind == kind]
        lines += [f"## {chosen[0].title.split(',')[0]}", "", _ABOUT[kind], ""]
        lines += _table(["set", "split", *_HEADERS[kind], "command"],
                        [[ev.title.split(", ", 1)[1], ev.split, *_row(ev, load(ev.name, folder)), f"`{ev.command}`"]
                         for ev in chosen])
        lines.append("")
        if kind == "screen":
            lines += ["The conversation holdout, by file:", "",
                      *_context_by_file(load("screen_context_holdout", folder)), ""]
    return "\n".join(lines).rstrip() + "\n"


def figures_block(folder: Path = RESULTS_DIR) -> str:
    """The README's short table: the holdouts only."""
    rows = []
    for name, what, shown in (
            ("answers_holdout_mixed_questions", "Answers, holdout: fully correct · right route · must-not hits",
             lambda d: f"{d['fully_correct']:.2f} · {d['route_accuracy']:.2f} · {d['must_not_hits']}"),
            ("screen_holdout", "Input screen, single messages: crisis recall · false alarms",
             lambda d: f"{d['crisis_recall']:.3f} · {_pct(d['crisis_false_positive_rate'])}"),
            ("screen_context_holdout", "Input screen, conversations: crisis recall · false alarms",
             lambda d: f"{d['crisis_recall']:.3f} · {_pct(d['crisis_false_positive_rate'])}"),
            ("retrieval_holdout", "Source identification, holdout: recall@1 · recall@3",
             lambda d: f"{d['recall_at_1']:.3f} · {d['recall_at_3']:.3f}"),
            ("judges_holdout", "Draft judges (tier 0), holdout: flag recall · precision",
             lambda d: f"{d['flag_recall']:.3f} · {d['flag_precision']:.3f}")):
        ev = next(e for e in EVALUATIONS if e.name == name)
        rows.append([what, shown(load(name, folder)), f"`{ev.command}`"])
    return "\n".join([FIGURES_START, *_table(["measure", "figure", "command"], rows), FIGURES_END])


def with_figures(readme: str, block: str) -> str:
    """`readme` with its figures block replaced by `block`."""
    if FIGURES_START not in readme or FIGURES_END not in readme:
        raise CafbotError(f"{README}: no figures block ({FIGURES_START!r} … {FIGURES_END!r})")
    head, rest = readme.split(FIGURES_START, 1)
    return head + block + rest.split(FIGURES_END, 1)[1]


def write(folder: Path = RESULTS_DIR) -> list[Path]:
    RESULTS_PAGE.write_text(results_page(folder), encoding="utf-8")
    README.write_text(with_figures(README.read_text(encoding="utf-8"), figures_block(folder)), encoding="utf-8")
    return [RESULTS_PAGE, README]
