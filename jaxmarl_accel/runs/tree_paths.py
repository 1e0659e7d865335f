"""How a checkpoint names its arrays: by their tree path in the training state
(``jax.tree_util.keystr``: ``".algo.actor['params'][0]"``), and as the nested dicts of an
orbax checkpoint (``state["algo"]["actor"]["params"]["0"]``)."""

from __future__ import annotations

import re
from typing import Any

_KEY = re.compile(r"\.([^.\[]+)|\['([^']*)'\]|\[(\d+)\]")


def path_keys(name: str) -> tuple[str, ...]:
    """The keys of a tree path written by ``jax.tree_util.keystr``
    (``".algo.actor['params'][0]"`` -> ``("algo", "actor", "params", "0")``); ``ValueError``
    for a name that is not such a path."""
    keys = tuple(next(group for group in match.groups() if group is not None)
                 for match in _KEY.finditer(name))
    if "".join(match.group(0) for match in _KEY.finditer(name)) != name or not keys:
        raise ValueError(f"cannot name the checkpoint entry {name!r} by its tree path")
    return keys


def nested(items: dict[str, Any]) -> dict[str, Any]:
    """``items`` (tree path -> value) as nested dicts keyed by the path's parts: the
    structure of an orbax checkpoint's ``state/``."""
    tree: dict[str, Any] = {}
    for name, value in items.items():
        *parents, last = path_keys(name)
        node = tree
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return tree


def from_nested(tree: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The values of ``tree`` (nested dicts, as :func:`nested` makes) at the tree paths
    ``names``, keyed by those paths."""
    out = {}
    for name in names:
        node = tree
        for key in path_keys(name):
            node = node[key]
        out[name] = node
    return out
