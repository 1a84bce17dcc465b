"""Danger visible only with what came before: the input screen's reading of a message together with
the user's last few messages ("my voices are back", then "they want me to take all of them and I
think they're right"), and, right after a crisis, whether the next message still carries it.

Two small learned models over the screen's own readings (the message alone, the earlier messages
alone, the message joined to the one before it and to the last few) and, with the embedder, the
embeddings of the message and of the one before it, and after a crisis of what the message tells
with its questions set aside: one for a conversation with no crisis just before (does danger
emerge?), one for the message right after a crisis (does it go on?). The
situations are apart because the same readings mean different things in them: after a crisis the
joined text always holds that crisis, and "ok" is a brush-off, not a thank-you. The screen reads a
joined conversation as it reads any message. Trained on conversations
(`scenarios/screen/in_context/train`), seeded and cross-validated five times over: each threshold
is the highest that keeps the screen's recall on the pooled held-out readings at the target,
counting what the screen already catches without it, as a user turn runs them; after a crisis
only the learned layer saw, unsure, a line of its own (`LINES`). Shipped as an
artefact (app/core/learning/artefacts.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from app.core.answer_types import asks_anything, what_it_tells
from app.core.config import REPO_ROOT
from app.core.learning import artefacts
from app.core.learning.logistic import fit_logistic, sigmoid
from screening import screen_model
from screening.crisis import Assessment, Screens, assess
from screening.crisis_text import normalise

if TYPE_CHECKING:
    from app.core.scenarios import Scenario

NAME = "context_screen"
FEATURE_VERSION = 5  # 2: a model for each situation; 3: read since the latest crisis; 4: what it tells;
# 5: a line after an unsure crisis
TRAIN_DIR = REPO_ROOT / "scenarios" / "screen" / "in_context" / "train"
LOOKBACK = 3  # the user's earlier messages a danger is read with
SITUATIONS = ("no_crisis_before", "after_a_crisis")  # a model each
# Each model's lines, the recall target held on each: right after a crisis the learned layer alone
# saw, unsure, the message before is more often a false alarm than after a sure one, so the same
# reading means less danger going on.
LINES = {"no_crisis_before": ("no_crisis_before",), "after_a_crisis": ("after_a_crisis", "after_an_unsure_crisis")}
SETTINGS = {"c": 3.0, "folds": 5, "seed": 0, "repeats": 5, "recall_target": 0.98, "lookback": LOOKBACK,
            "screen_features": screen_model.FEATURE_VERSION}
_CLIP = 6.0  # logits beyond this say nothing more


@dataclass(frozen=True)
class ContextReading:
    probability: float  # the message is a crisis read with the conversation
    threshold: float
    crisis_kind: str = ""  # the joined reading's likeliest kind of crisis
    evidence: tuple[str, ...] = ()  # the earlier message(s) the danger is read with, then this one

    @property
    def is_crisis(self) -> bool:
        return self.probability >= self.threshold


@dataclass(frozen=True)
class _Readings:
    values: list[float]
    after_a_crisis: bool  # the message just before was itself a crisis
    unsure_before: bool  # … one only the learned layer saw, below its confident line
    strongest: Assessment  # the joined reading most over its line (for the crisis's kind)


def _line(read: _Readings, *, confirmed: bool = False) -> str:
    """Which of `LINES` a message is read against (`confirmed`: a screener agreed with the crisis
    before it)."""
    if not read.after_a_crisis:
        return "no_crisis_before"
    return "after_an_unsure_crisis" if read.unsure_before and not confirmed else "after_a_crisis"


def training_files() -> list[Path]:
    return sorted(TRAIN_DIR.glob("*.jsonl"))


def current_hash() -> str | None:
    """Its own conversations and the screen's data: the features are the screen's readings."""
    files = training_files()
    return artefacts.data_hash([*files, *screen_model.training_files()], SETTINGS) if files else None


def joined(messages: list[str]) -> str:
    """Messages read as one text, each ending as a sentence so the screen reads them as such."""
    return " ".join(m.strip() if m.strip()[-1:] in ".!?" else f"{m.strip()}." for m in messages if m.strip())


def _margin(found: Assessment) -> float:
    """How far a reading is over (or under) its crisis threshold, in logits; a pattern's or the
    lexicon's hit is as far over as it goes."""
    if found.crisis and found.layer.startswith(("pattern", "language")):
        return _CLIP
    p, t = np.clip([found.score, found.threshold], 1e-4, 1 - 1e-4)
    return float(np.clip(np.log(p / (1 - p)) - np.log(t / (1 - t)), -_CLIP, _CLIP))


def since_last_crisis(earlier: list[str], res: Screens) -> list[str]:
    """The earlier messages a danger is read with: the last `LOOKBACK`, or, right after a crisis,
    that crisis and those before it; otherwise only those after the latest crisis among them, whose
    danger the crisis reply and the turn after it have already met ("ok" two messages after an
    overdose is not the overdose again)."""
    earlier = [m for m in earlier[-LOOKBACK:] if m.strip()]
    if earlier and assess(earlier[-1], res).crisis:
        return earlier
    crises = [i for i, m in enumerate(earlier) if assess(m, res).crisis]
    return earlier[crises[-1] + 1:] if crises else earlier


def _readings(earlier: list[str], text: str, res: Screens) -> _Readings:
    """The screen's readings the models learn from (`earlier` as `since_last_crisis` gives it)."""
    alone = assess(text, res)
    before = [assess(m, res) for m in earlier]
    last = assess(joined([*earlier[-1:], text]), res)
    whole = assess(joined([*earlier, text]), res) if len(earlier) > 1 else last
    values = [_margin(alone), _margin(last), _margin(whole), max((_margin(b) for b in before), default=-_CLIP),
              _margin(before[-1]) if before else -_CLIP, alone.small_talk, float(asks_anything(text))]
    return _Readings(values, bool(before) and before[-1].crisis, bool(before) and before[-1].unsure_crisis,
                     whole if _margin(whole) >= _margin(last) else last)


def caught_without(earlier: list[str], text: str, res: Screens) -> bool:
    """What the screen catches without these models, as a user turn runs it: the message alone, or,
    right after a crisis, a message that asks nothing of its own ("forget it", "it was a joke")."""
    previous = next((m for m in reversed(earlier) if m.strip()), None)
    return assess(text, res).crisis or (previous is not None and assess(previous, res).crisis
                                        and not asks_anything(text))


def features(earlier: list[str], text: str, res: Screens, *, embedded: bool) -> tuple[np.ndarray | None, _Readings]:
    """The readings, and with `embedded` the embeddings of the message, of the previous message and,
    right after a crisis, of what the message tells: there "the pills are with my sister now" or
    "forget it" decides, not the question that follows it (None when the embedder cannot give
    them); `earlier` as `since_last_crisis` gives it."""
    read = _readings(earlier, text, res)
    x = np.asarray(read.values, dtype=np.float32)
    if not embedded:
        return x, read
    previous = next((m for m in reversed(earlier) if m.strip()), "")
    said = [text, previous, *([what_it_tells(text)] if read.after_a_crisis else [])]
    vectors = res.encode([normalise(t, idioms="marked") for t in said])
    return (None if vectors is None else np.concatenate([x, *vectors])), read


def conversations(files: list[Path] | None = None) -> list[Scenario]:
    """Every conversation the model learns from (a message with at least one earlier user message)."""
    from app.core.scenarios import load_scenarios

    return [s for s in load_scenarios(files or training_files()) if any(t.role == "user" for t in s.history)]


def _earlier(scenario: Scenario) -> list[str]:
    return [t.content for t in scenario.history if t.role == "user"]


def _threshold(p: np.ndarray, truth: np.ndarray, caught_alone: np.ndarray, target: float) -> float:
    """The highest threshold at which the message alone and the context together keep the recall
    target on held-out readings."""
    for t in np.round(np.arange(0.95, 0.04, -0.01), 2):
        if (caught_alone | (p >= t))[truth].mean() >= target:
            return float(t)
    return 0.05


def _cross_validated(x: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each row's reading by a model fitted without its fold, one line per repeat of the split
    (seeds `seed`, `seed` + 1, …): the threshold one split gives moves with its seed by as much as
    0.1, a handful of crises deciding it."""
    # Imported for training only: it brings scipy.stats and pandas with it.
    from sklearn.model_selection import StratifiedKFold

    read = np.zeros((SETTINGS["repeats"], len(truth)))
    for repeat in range(SETTINGS["repeats"]):
        folds = StratifiedKFold(SETTINGS["folds"], shuffle=True, random_state=SETTINGS["seed"] + repeat)
        for train_rows, dev_rows in folds.split(x, truth):
            w, b = fit_logistic(x[train_rows], truth[train_rows], SETTINGS["c"])
            read[repeat, dev_rows] = sigmoid(x[dev_rows] @ w + b)
    return read


def _metrics(flagged: np.ndarray, truth: np.ndarray, caught_alone: np.ndarray, found: list[Scenario],
             lines: np.ndarray) -> dict[str, Any]:
    """Recall and false alarms with and without these models, over every conversation and for each
    line (`flagged`: a line per repeat of the cross-validation, averaged over)."""
    figures: dict[str, Any] = {}
    after = lines != "no_crisis_before"
    parts = {"all": np.ones_like(truth), "after_a_crisis": after,  # either line
             "after_an_unsure_crisis": lines == "after_an_unsure_crisis", "no_crisis_before": ~after}
    for part, rows in parts.items():
        figures[part] = {
            "n": int(rows.sum()),
            "crisis_recall": round(float(flagged[:, rows & truth].mean()), 3) if (rows & truth).any() else None,
            "false_crisis_rate": round(float(flagged[:, rows & ~truth].mean()), 3) if (rows & ~truth).any() else None,
            "recall_without_context": round(float(caught_alone[rows & truth].mean()), 3) if (rows & truth).any() else None,
            "false_crisis_rate_without_context":
                round(float(caught_alone[rows & ~truth].mean()), 3) if (rows & ~truth).any() else None}
    figures.update(figures.pop("all"))
    figures["per_category"] = {category: {"n": int(rows.sum()), "flagged": round(float(flagged[:, rows].mean()), 3)}
                               for category in sorted({s.category for s in found})
                               if (rows := np.array([s.category == category for s in found])).any()}
    return figures


def train(res: Screens, out_dir: Path = artefacts.ARTEFACTS_DIR) -> artefacts.ModelCard:
    """Fit each situation's model in the readings-only variant and, with embeddings, the embedded
    one; each threshold on its own cross-validated readings."""
    data_hash = current_hash() or ""  # of the data as read now, not as it may be when the fit ends
    found = conversations()
    truth = np.array([s.expected == "crisis" for s in found])
    caught_alone = np.array([caught_without(_earlier(s), s.user, res) for s in found])
    bundle: dict[str, Any] = {}
    metrics: dict[str, Any] = {}
    thresholds: dict[str, float] = {}
    for variant in ["readings", *(["embedded"] if res.embeddings else [])]:
        read = [features(since_last_crisis(_earlier(s), res), s.user, res, embedded=variant == "embedded") for s in found]
        after = np.array([r.after_a_crisis for _, r in read])
        lines = np.array([_line(r) for _, r in read])
        repeats = SETTINGS["repeats"]
        flagged = np.tile(caught_alone, (repeats, 1))  # a line per repeat
        bundle[variant] = {}
        for situation, rows in zip(SITUATIONS, (~after, after), strict=True):
            x = np.stack([f for (f, _), row in zip(read, rows, strict=True) if row])  # type: ignore[misc]
            p = _cross_validated(x, truth[rows])
            weights, bias = fit_logistic(x, truth[rows], SETTINGS["c"])
            bundle[variant][situation] = {"weights": weights, "bias": bias, "thresholds": {}}
            for line in LINES[situation]:
                among = lines[rows] == line
                threshold = _threshold(p[:, among].ravel(), np.tile(truth[rows][among], repeats),
                                       np.tile(caught_alone[rows][among], repeats), SETTINGS["recall_target"])
                bundle[variant][situation]["thresholds"][line] = threshold
                thresholds[f"{variant}.{line}"] = threshold
                flagged[:, np.flatnonzero(rows)[among]] |= p[:, among] >= threshold
        metrics[variant] = _metrics(flagged, truth, caught_alone, found, lines)
    card = artefacts.ModelCard(
        name=NAME, feature_version=FEATURE_VERSION, data_hash=data_hash,
        data_files=[str(p.relative_to(REPO_ROOT)) for p in training_files()],
        split_sizes={"conversations": len(found), "crisis": int(truth.sum()), "folds": SETTINGS["folds"],
                     **{f"category.{k}": n for k, n in sorted(Counter(s.category for s in found).items())}},
        dev_metrics=metrics, thresholds=thresholds,
        embedder=res.embedder_name if "embedded" in bundle else "",
        notes=("Two logistic regressions (no crisis just before; right after a crisis) over the input "
               "screen's readings of the message alone, the earlier messages alone and the message joined "
               "to them (+ the MiniLM embeddings of the message, of the previous message and, after a "
               "crisis, of what the message tells without its questions, in the 'embedded' variant). Dev "
               "metrics are cross-validated, pooled over the repeats, and count what the screen catches "
               f"without them. Settings: {SETTINGS}."))
    artefacts.save(NAME, bundle, card, out_dir, compress=artefacts.FAST_TO_LOAD)
    return card


class ContextModel:
    """The shipped models, loaded once per process."""

    def __init__(self, res: Screens, bundle: dict[str, Any], card: artefacts.ModelCard):
        self.res, self.bundle, self.card = res, bundle, card

    @classmethod
    def load(cls, res: Screens, folder: Path = artefacts.ARTEFACTS_DIR) -> ContextModel:
        bundle, card = artefacts.load(NAME, feature_version=FEATURE_VERSION, current_hash=current_hash(),
                                      folder=folder)
        return cls(res, bundle, card)

    def read(self, earlier: list[str], text: str, *, crisis_before_confirmed: bool = False) -> ContextReading | None:
        """The message read with the user's earlier messages (oldest first); None without any.
        `crisis_before_confirmed`: a screener agreed that the message before is a crisis, so it
        is read after as after a sure one."""
        earlier = since_last_crisis(earlier, self.res)
        if not earlier or not text.strip():
            return None
        embedded = ("embedded" in self.bundle and self.res.embeddings
                    and self.res.embedder_name == self.card.embedder)
        x, read = features(earlier, text, self.res, embedded=embedded)
        if x is None:  # the embedder failed just now: the readings alone decide
            x, read = features(earlier, text, self.res, embedded=False)
            embedded = False
        model = self.bundle["embedded" if embedded else "readings"][SITUATIONS[read.after_a_crisis]]
        p = float(sigmoid(np.asarray(x @ model["weights"] + model["bias"])))
        threshold = model["thresholds"][_line(read, confirmed=crisis_before_confirmed)]
        return ContextReading(round(p, 4), threshold, read.strongest.crisis_kind, (*earlier, text))
