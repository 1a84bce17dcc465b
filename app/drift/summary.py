"""`cafbot drift summary RUN`: per role and condition, how compliant the final answers were and
when conversations first drifted.

- `share_compliant`: final answers the filter's local checks do not reject (the audit, the same
  for every condition); `share_all_pass`: answers every applicable check passes outright.
- drift onset: a conversation's first turn whose final answer is not compliant (none if it never is).
- survival: the share of conversations still compliant after k turns, k = 1..turns.
- `share_withheld`: answers replaced by the fixed "I couldn't put together an answer" reply
  because nothing passed the filter; `share_answered`: answers on the answer route that were not
  withheld. Compliance bought by withholding shows here (over-refusal, above all for benign users).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from pydantic import Field

from app.core.errors import ConfigError
from app.core.records import Record
from app.drift.runner import DriftTurn, Manifest, RunFolder


class GroupSummary(Record):
    role: str
    condition: str
    conversations: int
    answers: int
    share_compliant: float
    share_all_pass: float
    share_withheld: float
    share_answered: float
    onset_median: float | None  # median first failing turn among conversations that drifted
    drifted: int  # conversations with at least one failing answer
    survival: list[float]  # still compliant after turn 1, 2, ...
    warnings: int
    refinements: int
    fallbacks: int
    latency_ms_per_turn: float
    tokens_per_turn: float


class RunSummary(Record):
    run_id: str
    turns: int
    groups: list[GroupSummary] = Field(default_factory=list)


def summarise(records: list[DriftTurn], run_id: str = "") -> RunSummary:
    turns = max((r.turn for r in records), default=0)
    groups: dict[tuple[str, str], list[DriftTurn]] = {}
    for record in records:
        groups.setdefault((record.role, record.condition), []).append(record)
    summary = RunSummary(run_id=run_id or (records[0].run_id if records else ""), turns=turns)
    for (role, condition), rows in sorted(groups.items()):
        conversations: dict[int, list[DriftTurn]] = {}
        for row in rows:
            conversations.setdefault(row.sample, []).append(row)
        onsets = [onset(sorted(c, key=lambda r: r.turn)) for c in conversations.values()]
        summary.groups.append(GroupSummary(
            role=role, condition=condition, conversations=len(conversations), answers=len(rows),
            share_compliant=_share(r.compliant for r in rows),
            share_all_pass=_share(all(v == "pass" for v in r.audit.values()) for r in rows),
            share_withheld=_share(withheld(r) for r in rows),
            share_answered=_share(r.route == "answer" and not withheld(r) for r in rows),
            onset_median=statistics.median(o for o in onsets if o is not None) if any(o is not None for o in onsets) else None,
            drifted=sum(o is not None for o in onsets),
            survival=[_share(o is None or o > k for o in onsets) for k in range(1, turns + 1)],
            warnings=sum(len(r.warnings) for r in rows), refinements=sum(r.refine_rounds for r in rows),
            fallbacks=sum(r.fallback_used for r in rows),
            latency_ms_per_turn=statistics.fmean(r.latency_ms for r in rows),
            tokens_per_turn=statistics.fmean(r.input_tokens + r.output_tokens for r in rows)))
    return summary


def withheld(record: DriftTurn) -> bool:
    return record.generator == "fixed" and record.route in ("answer", "boundary")


def onset(conversation: list[DriftTurn]) -> int | None:
    return next((r.turn for r in conversation if not r.compliant), None)


def load_run(run: Path) -> tuple[Manifest, list[DriftTurn]]:
    folder = RunFolder(run)
    manifest = folder.read_manifest()
    if manifest is None:
        raise ConfigError(f"{run}: no drift run here (no manifest.json); `cafbot drift run` writes one.")
    return manifest, folder.read_turns()


def plot_survival(summary: RunSummary, path: Path) -> Path:
    """The survival curves, one per role and condition, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    roles = sorted({g.role for g in summary.groups})
    columns = min(3, len(roles)) or 1
    rows = -(-len(roles) // columns) or 1
    figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3 * rows), squeeze=False, sharey=True)
    styles = {"on": "-", "off": "--", "tier0": ":"}
    for axis, role in zip(axes.flat, roles, strict=False):
        for group in (g for g in summary.groups if g.role == role):
            x = list(range(summary.turns + 1))
            axis.step(x, [1.0, *group.survival], where="post", linestyle=styles.get(group.condition, "-"),
                      label=f"CAF {group.condition}")
        axis.set_title(role.replace("_", " "))
        axis.set_xlabel("facilitator turn")
        axis.set_ylim(-0.05, 1.05)
        axis.legend(loc="lower left", fontsize="small")
    for axis in list(axes.flat)[len(roles):]:
        axis.axis("off")
    axes[0][0].set_ylabel("still compliant")
    figure.suptitle(f"Drift survival: {summary.run_id}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _share(values) -> float:
    values = list(values)
    return round(sum(bool(v) for v in values) / len(values), 4) if values else 0.0
