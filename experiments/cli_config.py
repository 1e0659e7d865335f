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


def _optional(convert: Any) -> Any:
    def parse(text: str) -> Any:
        return None if text.lower() == "none" else convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def _flag_kwargs(annotation: Any, default: Any) -> dict[str, Any] | None:
    """argparse keywords for a field of type ``annotation``; None for unsupported types."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and args and args[-1] is Ellipsis:
        return {"type": args[0], "nargs": "+"}
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), annotation) if args else annotation
    convert = {bool: _parse_bool, int: int, float: float, str: str}.get(base)
    if convert is None:
        return None
    return {"type": _optional(convert) if optional else convert}


def add_dataclass_flags(parser: argparse.ArgumentParser, cls: type, *, skip: tuple[str, ...] = (),
                        only: tuple[str, ...] | None = None,
                        choices: dict[str, tuple[str, ...]] | None = None,
                        defaults: dict[str, Any] | None = None,
                        aliases: dict[str, tuple[str, ...]] | None = None,
                        shown_defaults: dict[str, str] | None = None) -> list[str]:
    """Add one ``--field-name`` flag per scalar or tuple field of ``cls``.

    ``Optional`` fields accept ``none``; ``tuple[int, ...]`` fields take several values.
    ``only`` keeps just those fields, ``skip`` leaves some out, ``defaults`` replaces a
    field's default for this command, ``shown_defaults`` the text the help gives as the
    default (when the command resolves it later), ``aliases`` adds other spellings.
    Returns the field names that became flags.
    """
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    names = []
    for field in dataclasses.fields(cls):
        if field.name in skip or (only is not None and field.name not in only):
            continue
        if field.default is dataclasses.MISSING:
            continue
        kwargs = _flag_kwargs(hints.get(field.name), field.default)
        if kwargs is None:
            continue
        default = (defaults or {}).get(field.name, field.default)
        flags = ["--" + field.name.replace("_", "-"), *(aliases or {}).get(field.name, ())]
        help_text = docs.get(field.name, field.name.replace("_", " "))
        shown = " ".join(map(str, default)) if isinstance(default, tuple) else default
        shown = (shown_defaults or {}).get(field.name, shown)
        parser.add_argument(*flags, dest=field.name, default=default,
                            choices=(choices or {}).get(field.name),
                            help=f"{help_text} (default: {shown})", **kwargs)
        names.append(field.name)
    return names


def train_choices() -> dict[str, tuple[str, ...]]:
    """The valid values of the ``TrainConfig`` and ``AlgoConfig`` fields that name a
    registry entry or a mode."""
    from jaxmarl_accel.algos.config import CONTINUOUS_POLICIES, LEARNERS
    from jaxmarl_accel.config import ALGOS, INDEX_SHARING, LAYOUTS, PREY_MODES, SAMPLERS
    from jaxmarl_accel.envs import SCENARIOS

    return {"env": tuple(SCENARIOS), "sampler": tuple(SAMPLERS), "layout": tuple(LAYOUTS),
            "index_sharing": tuple(INDEX_SHARING), "prey": PREY_MODES, "algo": tuple(ALGOS),
            "learners": LEARNERS, "continuous_policy": CONTINUOUS_POLICIES}


def train_config_from_args(args: argparse.Namespace, **fixed: Any) -> Any:
    """The ``TrainConfig`` of the parsed flags (fields without a flag keep their defaults;
    ``fixed`` sets fields the command decides itself); ``AlgoConfig`` likewise."""
    from jaxmarl_accel.algos import AlgoConfig
    from jaxmarl_accel.config import TrainConfig

    values = dataclass_values(TrainConfig, args)
    values["algo_config"] = AlgoConfig(**dataclass_values(AlgoConfig, args))
    values.update(fixed)
    return TrainConfig(**values)


def dataclass_values(cls: type, namespace: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of ``cls``'s flags, lists turned back into tuples."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.name != "algo_config" and hasattr(namespace, field.name):
            value = getattr(namespace, field.name)
            values[field.name] = tuple(value) if isinstance(value, list) else value
    return values


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
