"""Who scores what, in which order: each item to a set number of raters, the load balanced, every
rater's items in their own shuffled order (so no one sees a run's conditions side by side). The
seed is recorded with each assignment; assigning again only tops items up."""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict

from app.core.errors import ConfigError
from app.store import Assignment, ScoreStore
from app.store.scores import RATER_NAME


def check_rater(name: str) -> str:
    if not re.match(RATER_NAME, name):
        raise ConfigError(f"rater {name!r}: use letters, digits and . _ @ - (up to 64, no spaces).")
    return name


def assign(store: ScoreStore, collection: str, raters: list[str], *, per_item: int, seed: int) -> dict[str, int]:
    """Give every item of `collection` `per_item` raters; returns the new items per rater."""
    items = store.item_ids(collection)
    if not items:
        raise ConfigError(f"collection {collection!r} has no items; add a run first (`cafbot score add-run`).")
    raters = list(dict.fromkeys(check_rater(r) for r in raters))
    if not 1 <= per_item <= len(raters):
        raise ConfigError(f"--per-item {per_item}: choose from 1 to the number of raters ({len(raters)}).")
    for rater in raters:
        store.add_rater(rater)
    existing = store.assignments(collection)
    rated_by: dict[str, set[str]] = defaultdict(set)
    load: Counter[str] = Counter({r: 0 for r in raters})
    last_position: Counter[str] = Counter()
    for a in existing:
        rated_by[a.item_id].add(a.rater)
        load[a.rater] += 1
        last_position[a.rater] = max(last_position[a.rater], a.position)
    rng = random.Random(f"{seed}/{collection}")
    rng.shuffle(items)
    new: dict[str, list[str]] = defaultdict(list)
    for item in items:
        candidates = [r for r in raters if r not in rated_by[item]]
        rng.shuffle(candidates)
        candidates.sort(key=lambda r: load[r])  # the least loaded first; ties in random order
        for rater in candidates[: per_item - len(rated_by[item])]:
            rated_by[item].add(rater)
            load[rater] += 1
            new[rater].append(item)
    assignments = []
    for rater, rater_items in new.items():
        random.Random(f"{seed}/{collection}/{rater}").shuffle(rater_items)
        assignments += [Assignment(rater=rater, item_id=item, position=last_position[rater] + n, seed=seed)
                        for n, item in enumerate(rater_items, 1)]
    store.add_assignments(assignments)
    return {rater: len(new.get(rater, [])) for rater in raters}
