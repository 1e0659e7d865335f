"""Objects named by reference from user code: ``"package.module:attr"``.

The command line's ``--env package.module:factory`` and ``--algo package.module:spec`` (the
``module:attr`` form of Python's entry points) load an environment factory or a learner
record from the user's own module, so that neither needs a file inside this package. Every
failure is one line (a ``ValueError`` naming the reference and what is wrong), which the
command line prints without a traceback.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any

_REFERENCE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def is_reference(text: str) -> bool:
    """Whether ``text`` has the form ``package.module:attr`` (dotted names on both sides)."""
    return isinstance(text, str) and bool(_REFERENCE.match(text))


class ReferenceChoices(tuple):
    """The valid values of a command-line flag that names a registered record, for its
    ``choices``: iterates over ``shown`` (the registered names and the reference form, as
    help shows them), and contains every name in ``registered`` (the live registry) and every
    ``package.module:attr`` reference (checked when it is loaded)."""

    registered: Any

    def __new__(cls, shown: Any, registered: Any) -> ReferenceChoices:
        choices = super().__new__(cls, shown)
        choices.registered = registered
        return choices

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.registered or is_reference(name))


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


def load_reference(text: str, what: str) -> Any:
    """The object ``attr`` of module ``package.module`` named by ``text``.

    The working folder is searched first, as ``python -m`` does, so that
    ``--env examples.custom_env:make`` finds ``examples/custom_env.py`` of the folder the
    command runs in.

    Args:
      text: ``"package.module:attr"`` (``attr`` may be dotted: ``module:Class.member``).
      what: how errors name the reference, e.g. ``"--env"`` or ``"algo"``.

    Returns:
      The object. Raises a one-line ``ValueError`` for a malformed reference, a module that
      cannot be found or fails to import (its own error, with the module's name), or a
      missing attribute.
    """
    if not is_reference(text):
        raise ValueError(f"{what} {text!r}: expected a reference package.module:attr")
    module_name, attr = text.split(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise ValueError(f"{what} {text!r}: no module named {error.name!r} (searched the "
                             "working folder and the installed packages)") from None
        raise ValueError(f"{what} {text!r}: importing module {module_name!r} failed: "
                         f"{_one_line(error)}") from None
    except Exception as error:  # the user's module raised while importing
        raise ValueError(f"{what} {text!r}: importing module {module_name!r} failed: "
                         f"{_one_line(error)}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"{what} {text!r}: module {module_name!r} has no attribute "
                             f"{attr!r}")
        target = getattr(target, part)
    return target


def load_record(text: str, what: str, record_type: type) -> Any:
    """The record of type ``record_type`` (e.g. an ``AlgoSpec``) named by reference ``text``
    (:func:`load_reference`); a one-line ``ValueError`` also when the object is of another
    type."""
    record = load_reference(text, what)
    if not isinstance(record, record_type):
        raise ValueError(f"{what} {text!r} is an object of type {type(record).__name__}, not a "
                         f"jaxmarl_accel.{record_type.__name__}")
    return record


__all__ = ["ReferenceChoices", "is_reference", "load_record", "load_reference"]
