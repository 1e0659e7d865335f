"""One-line validation errors that configs, envs, buffers and learners share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def choice_message(name: str, value: Any, options: Iterable[Any]) -> str:
    """``"NAME must be one of A, B, C; got 'VALUE'"``: the message of a value that is not
    one of ``options`` (the command line rewrites ``NAME`` as its flag)."""
    return f"{name} must be one of {', '.join(map(str, options))}; got {value!r}"


def check_choice(name: str, value: Any, options: Iterable[Any]) -> Any:
    """``value`` if it is one of ``options``; a one-line ``ValueError`` naming ``name`` and
    the options (:func:`choice_message`) otherwise."""
    options = tuple(options)
    if value not in options:
        raise ValueError(choice_message(name, value, options))
    return value


def check_counts(config: Any, names: Iterable[str]) -> None:
    """A one-line ``ValueError`` naming the first of ``config``'s fields ``names`` that is not
    an int >= 1 (a bool is not one)."""
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def check_widths(name: str, widths: Any) -> None:
    """A one-line ``ValueError`` naming ``name`` when ``widths`` (a network's layer widths)
    is empty or holds anything but positive ints."""
    if not widths or any(isinstance(h, bool) or not isinstance(h, int) or h <= 0
                         for h in widths):
        raise ValueError(f"{name} must be positive ints, got {widths!r}")
