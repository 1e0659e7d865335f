"""Failures that are not the user's input: named by the phase of the run they stopped, with
their traceback kept in the run folder (``error.txt``) for a report.

A problem the user can fix is a ``ValueError`` raised on purpose, before the work it guards
(one line, exit status 2). Anything else that escapes a phase of a run (building the env and
learners, compiling, training, writing) is a fault of the library, of JAX or of an env:
:func:`phase` turns it into a :class:`RunFailure` (exit status :data:`INTERNAL_STATUS`),
whatever its type, a ``ValueError`` raised while JAX traces the program included.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator

ERROR_NAME = "error.txt"
"""The file in the run folder that holds the traceback of a :class:`RunFailure`."""
INTERNAL_STATUS = 3
"""The command's exit status after a :class:`RunFailure` (2: bad input, 1: a non-finite
value stopped the run, 130: interrupted)."""


class RunFailure(Exception):
    """An error of the run, not of its input: ``phase`` (what the run was doing),
    ``error`` (the exception) and ``saved`` (the file holding its traceback, or None)."""

    def __init__(self, phase: str, error: BaseException, saved: str | None) -> None:
        super().__init__(phase, error, saved)
        self.phase, self.error, self.saved = phase, error, saved

    def __str__(self) -> str:
        text = (str(self.error).strip().splitlines() or [""])[0][:200]
        kept = (f"the traceback is in {self.saved}" if self.saved is not None
                else "its traceback could not be saved")
        return (f"internal failure while {self.phase} ({type(self.error).__name__}"
                f"{': ' + text if text else ''}); this is not a problem with the flags: "
                f"{kept}; please report it")


def save_traceback(out_dir: str | None, phase: str, error: BaseException) -> str | None:
    """Write ``error``'s traceback, the phase, the command line and the versions into
    ``out_dir/error.txt`` (the folder made if needed; without ``out_dir``, or where it cannot
    be written, a temporary file); its path, or None when nothing could be written."""
    text = "".join([f"phase: {phase}\n", f"time: {time.strftime('%Y-%m-%d %H:%M:%S %z')}\n",
                    f"command: {' '.join(sys.argv)}\n",
                    f"python {platform.python_version()}, {_versions()}, "
                    f"{platform.platform()}\n\n",
                    *traceback.format_exception(error)])
    if out_dir is not None:
        try:
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, ERROR_NAME)
            with open(path, "w") as file:
                file.write(text)
            return path
        except OSError:
            pass
    try:
        handle, path = tempfile.mkstemp(prefix="jaxmarl-accel-error-", suffix=".txt")
        with os.fdopen(handle, "w") as file:
            file.write(text)
        return path
    except OSError:
        return None


def _versions() -> str:
    from importlib import metadata

    found = []
    for name in ("jax", "jaxlib", "orbax-checkpoint", "jaxmarl_accel"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


@contextlib.contextmanager
def phase(name: str, out_dir: str | None, user_errors: tuple[type[BaseException], ...] = ()
          ) -> Iterator[None]:
    """Run the block as the phase ``name`` of the run in ``out_dir``: an exception that
    escapes it is raised again as a :class:`RunFailure` (its traceback saved,
    :func:`save_traceback`), unless it is one of ``user_errors`` (the block's own refusals of
    bad input), a ``KeyboardInterrupt`` or a :class:`RunFailure` already."""
    try:
        yield
    except (RunFailure, *user_errors):
        raise
    except Exception as error:
        raise RunFailure(name, error, save_traceback(out_dir, name, error)) from error
