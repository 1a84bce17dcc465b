"""Loading a YAML data file into a typed schema, with errors that name the file and the field.

Facilitators, drift scripts and the rubric are data people edit by hand; a mistake must come back
as one line saying where it is and what is wrong, never as a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from app.core.errors import ConfigError

T = TypeVar("T", bound=BaseModel)
# libyaml where this PyYAML was built with it: the same data as `yaml.safe_load` (the same safe
# constructors), parsed ten times faster, which a short command reading the pattern files notices.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    """`yaml.safe_load(text)`; errors are `yaml.YAMLError`s as there."""
    return yaml.load(text, Loader=_LOADER)


def load_yaml(path: Path, schema: type[T]) -> T:
    """`path` parsed and validated as `schema`; a `ConfigError` naming file and field otherwise."""
    try:
        data = parse_yaml(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror or error}).") from error
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{where}: not valid YAML ({getattr(error, 'problem', None) or error}).") from error
    try:
        return schema.model_validate(data if data is not None else {})
    except ValidationError as error:
        problems = [f"field '{'.'.join(str(p) for p in e['loc']) or '(file)'}': {e['msg']}"
                    for e in error.errors()]
        raise ConfigError(f"{path}: " + "; ".join(problems)) from error


def yaml_files(paths: list[Path], *, what: str) -> list[Path]:
    """The YAML files named, folders expanded (sorted); a missing path is an error naming it."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")))
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigError(f"{path}: no such file or folder of {what}.")
    if not found:
        raise ConfigError(f"{', '.join(map(str, paths))}: no {what} (*.yaml) found.")
    return found
