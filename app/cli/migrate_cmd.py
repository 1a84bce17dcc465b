"""`cafbot migrate`: create or upgrade every store a deployment shares (the conversations'
checkpoints and cafbot's own tables), once, before replicas of a new version start."""

from __future__ import annotations

from rich.markup import escape

from app.cli.common import console, friendly_errors, load_settings


@friendly_errors
def migrate() -> None:
    """Create or upgrade the conversation store and the turn log / scoring store. Safe to run
    while other replicas start: every migration runs under a lock, once."""
    from app.graph.checkpoint import location, open_checkpointer
    from app.store import Database

    settings = load_settings()
    with open_checkpointer(settings, upgrade=True):
        console.print(f"conversation store ({escape(location(settings))}): up to date")
    store = Database.open(settings.data_dir, settings.store_url, upgrade=True)
    try:
        console.print(f"turn log and scores ({escape(store.location)}): schema version {store.version}, up to date")
    finally:
        store.close()
