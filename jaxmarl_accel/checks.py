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
