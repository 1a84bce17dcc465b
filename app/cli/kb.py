"""`cafbot kb ...` (placeholder until the knowledge-base commands land)."""

import typer

cli = typer.Typer(no_args_is_help=True)
