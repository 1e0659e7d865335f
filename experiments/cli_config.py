"""Command-line flags generated from the frozen config dataclasses.

Every field of :class:`~jaxmarl_accel.config.TrainConfig` and
:class:`~jaxmarl_accel.algos.AlgoConfig` becomes a ``--flag`` whose help text is the
field's entry in the class docstring, so flags and documentation never drift apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import typing
from typing import Any


def field_docs(cls: type) -> dict[str, str]:
    """Map field name -> description from a Google-style ``Attributes:`` docstring section."""
    doc = inspect.getdoc(cls) or ""
    docs: dict[str, str] = {}
    section = doc.split("Attributes:", 1)[1] if "Attributes:" in doc else ""
    current = None
    for line in section.splitlines():
        match = re.match(r"^\s{0,4}(\w+(?:,\s*\w+)*):\s*(.*)$", line)
        if match and not line.startswith(" " * 6):
            current = [name.strip() for name in match.group(1).split(",")]
            for name in current:
                docs[name] = match.group(2).strip()
        elif current and line.strip():
            for name in current:
                docs[name] += " " + line.strip()
    return docs


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _scalar_type(annotation: Any, default: Any) -> Any:
    if isinstance(default, bool) or annotation is bool:
        return _parse_bool
    if isinstance(default, int) or annotation is int:
        return int
    if isinstance(default, float) or annotation is float:
        return float
    return str


def add_dataclass_flags(parser: argparse.ArgumentParser, cls: type, *, skip: tuple[str, ...] = (),
                        choices: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Add one ``--field-name`` flag per scalar field of ``cls``; returns the field names."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    names = []
    for field in dataclasses.fields(cls):
        if field.name in skip or field.default is dataclasses.MISSING:
            continue
        default = field.default
        if not isinstance(default, (bool, int, float, str, type(None))):
            continue
        flag = "--" + field.name.replace("_", "-")
        help_text = docs.get(field.name, field.name.replace("_", " "))
        parser.add_argument(flag, dest=field.name, type=_scalar_type(hints.get(field.name), default),
                            default=default, choices=(choices or {}).get(field.name),
                            help=f"{help_text} (default: {default})")
        names.append(field.name)
    return names


def parse_key_values(text: str) -> tuple[tuple[str, Any], ...]:
    """Parse ``"a=1,b=0.5,c=name"`` into sorted ``(name, value)`` pairs with typed values."""
    if not text:
        return ()
    pairs = []
    for item in text.split(","):
        if "=" not in item:
            raise argparse.ArgumentTypeError(f"expected name=value, got {item!r}")
        name, raw = (part.strip() for part in item.split("=", 1))
        value: Any = raw
        for convert in (int, float, _parse_bool):
            try:
                value = convert(raw)
                break
            except (ValueError, argparse.ArgumentTypeError):
                continue
        pairs.append((name, value))
    return tuple(sorted(pairs))
