"""The random and scripted baselines of an env, measured once and reused by later runs.

A run's normalized score needs the random and scripted policies' returns over
``--baseline-episodes`` episodes, which can take longer than a short run's training (SMAX:
about half of a 100-second run). They depend only on the env and how they are measured, so
the first run stores them in a cache folder and every later run (and resume, and
``evaluate``) of the same env reads them back, bit for bit the same numbers.

The entry is keyed by everything that changes the result (:func:`baseline_key`): the env's
id and keyword arguments, the prey mode, the episodes, the PRNG seed, a hash of the env
code (the package's ``envs`` modules, the user's module for ``package.module:factory``
envs, JaxMARL's version for ``jaxmarl:<id>``), the package's and JAX's versions, the
backend, and :data:`CACHE_VERSION`. The folder is ``$JAXMARL_ACCEL_BASELINE_CACHE``, else
``$XDG_CACHE_HOME/jaxmarl_accel/baselines``, else ``~/.cache/jaxmarl_accel/baselines``;
``JAXMARL_ACCEL_BASELINE_CACHE=off`` measures every time and stores nothing.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import os
import tempfile
from typing import Any

import jax
import numpy as np

from jaxmarl_accel.envs.registry import JAXMARL_PREFIX

CACHE_ENV = "JAXMARL_ACCEL_BASELINE_CACHE"
"""The environment variable naming the cache folder, or ``off`` for none."""

CACHE_VERSION = 1
"""Part of every key: raised when how the baselines are measured changes."""

_ENVS_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "envs")


def cache_folder() -> str | None:
    """The folder baselines are stored in (see the module docstring); ``None`` when
    :data:`CACHE_ENV` is ``off`` (or empty)."""
    named = os.environ.get(CACHE_ENV)
    if named is not None:
        return None if named.strip().lower() in ("", "off") else named
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxmarl_accel", "baselines")


def _files_hash(paths: list[str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        with open(path, "rb") as handle:
            digest.update(os.path.basename(path).encode() + b"\0" + handle.read())
    return digest.hexdigest()[:16]


def env_code_tag(env: str) -> str:
    """A tag of the code an env's baselines come from: a hash of the package's ``envs``
    modules, with the module file of the factory of an env registered or referenced from
    user code (``package.module:factory``), or JaxMARL's version for ``jaxmarl:<id>``."""
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(_ENVS_FOLDER)
             for name in names if name.endswith(".py")]
    extra = ""
    if env.startswith(JAXMARL_PREFIX):
        try:
            extra = "jaxmarl " + importlib.metadata.version("jaxmarl")
        except importlib.metadata.PackageNotFoundError:
            extra = "jaxmarl unknown"
    else:  # a registered or referenced factory outside the package: its module's file too
        from jaxmarl_accel.envs import scenario

        try:
            source = inspect.getsourcefile(scenario(env).make)
        except (TypeError, ValueError, OSError):
            source = None
        if source is not None and os.path.isfile(source) and source not in paths:
            paths.append(source)
    return _files_hash(paths) + (f" {extra}" if extra else "")


def baseline_key(config: Any, key_seed: int, episodes: int) -> dict[str, Any]:
    """Everything the baselines of a run of ``config`` (a ``TrainConfig``), measured over
    ``episodes`` episodes from ``PRNGKey(key_seed)``, depend on, as JSON-ready values."""
    from jaxmarl_accel import __version__

    return {"version": CACHE_VERSION, "package": __version__, "jax": jax.__version__,
            "backend": jax.default_backend(), "env": config.env,
            "env_kwargs": [[name, repr(value)] for name, value in config.env_kwargs],
            "prey": config.prey, "episodes": episodes, "key_seed": key_seed,
            "env_code": env_code_tag(config.env)}


def entry_path(folder: str, key: dict[str, Any]) -> str:
    """The file of ``key``'s entry in ``folder``: named by the key's hash."""
    text = json.dumps(key, sort_keys=True)
    return os.path.join(folder, hashlib.sha256(text.encode()).hexdigest()[:32] + ".json")


def load(folder: str | None, key: dict[str, Any]) -> dict[str, Any] | None:
    """The baselines stored under ``key`` (per-agent returns as float32 arrays ``[N]``, the
    rest as floats), or ``None`` when there is no readable entry with exactly this key."""
    if folder is None:
        return None
    try:
        with open(entry_path(folder, key)) as handle:
            entry = json.load(handle)
    except (OSError, ValueError):
        return None
    if entry.get("key") != key:
        return None
    return {name: np.asarray(value, np.float32) if isinstance(value, list) else float(value)
            for name, value in entry["baselines"].items()}


def store(folder: str | None, key: dict[str, Any], baselines: dict[str, Any]) -> str | None:
    """Write ``baselines`` under ``key`` (atomically: a reader sees the old entry or the
    new one); returns the file, or ``None`` when there is no folder or it cannot be
    written (the run goes on; the next one measures again)."""
    if folder is None:
        return None
    values = {name: np.asarray(value).tolist() if np.ndim(value) else float(value)
              for name, value in baselines.items()}
    path = entry_path(folder, key)
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False) as handle:
            json.dump({"key": key, "baselines": values}, handle)
        os.replace(handle.name, path)
    except OSError:
        return None
    return path


__all__ = ["CACHE_ENV", "CACHE_VERSION", "baseline_key", "cache_folder", "entry_path",
           "env_code_tag", "load", "store"]
