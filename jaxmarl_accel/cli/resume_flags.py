"""``run --resume DIR``: the flags given beside it, checked against the run's ``config.json``.

A resumed run takes every setting from the run it continues. A flag given beside
``--resume`` with the run's own value changes nothing and is accepted (the command that
started the run may be repeated with ``--resume``); a flag with another value is refused in
one line naming it, as is a flag whose setting the run fixes in other ways (``--sweep``,
``--preset``). :data:`FREE` are how the run is executed, not what it computes, and may be
anything. ``--total-env-steps`` may grow: the run is then extended
(:mod:`jaxmarl_accel.runs.resume`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

FREE = ("resume", "quiet", "compile_cache", "devices", "env_shards", "stage", "cpu_devices",
        "distributed", "coordinator_address", "num_processes", "process_id")
"""The flags (by ``dest``) that a resumed run takes from the command line."""
FIXED = ("sweep", "sweep_samples", "preset")
"""Flags whose settings a resumed run keeps from its ``config.json`` in another form: never
given beside ``--resume``."""


def given_flags(parser: argparse.ArgumentParser, argv: list[str] | None) -> dict[str, Any]:
    """The flags of ``argv`` given on the command line (parsed values by ``dest``), without
    the defaults of the flags left out."""
    saved = [(action, action.default) for action in parser._actions]
    defaults = dict(parser._defaults)
    try:
        for action, _ in saved:
            action.default = argparse.SUPPRESS
        parser._defaults.clear()
        return vars(parser.parse_args(argv))
    finally:
        for action, default in saved:
            action.default = default
        parser._defaults.update(defaults)


def _flag(parser: argparse.ArgumentParser, dest: str) -> str:
    names = [name for action in parser._actions if action.dest == dest
             for name in action.option_strings]
    return max(names, key=len) if names else f"--{dest.replace('_', '-')}"


def _plain(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_plain(item) for item in value)
    return value


def _stored_value(dest: str, given: dict[str, Any], config: Any, stored: dict[str, Any],
                  resume: str) -> tuple[Any, Any]:
    """``(the flag's value, the run's)``, alike when the flag asks for what the run has;
    ``KeyError`` for a flag without a stored value."""
    from jaxmarl_accel.cli.scenario_flags import scenario_kwargs

    if dest in ("env_kwargs", "agents"):  # compared as the scenario keywords they make
        made = scenario_kwargs(config.env, given.get("env_kwargs", config.env_kwargs),
                               given.get("agents"))
        return tuple(sorted(made)), tuple(sorted(config.env_kwargs))
    if dest == "out":
        return os.path.abspath(given[dest]), os.path.abspath(resume)
    if dest == "checkpoint_replay":
        return given[dest], "true" if stored[dest] else "false"
    if dest in ("pbt", "pbt_every"):
        every = stored.get("pbt_every", 0)
        return given[dest], bool(every) if dest == "pbt" else every
    if dest in stored:
        return given[dest], stored[dest]
    for holder in (config, config.learner):
        if dest in {field.name for field in dataclasses.fields(holder)}:
            return given[dest], getattr(holder, dest)
    raise KeyError(dest)


def resumed_config(parser: argparse.ArgumentParser, argv: list[str] | None, resume: str,
                   config: Any, stored: dict[str, Any]) -> Any:
    """The config a resume of the run ``config`` (its stored options ``stored``) runs: its
    own, with a larger ``--total-env-steps`` when one is given. ``ValueError`` (one line,
    naming the flag) for a flag given with another value than the run's, or one of
    :data:`FIXED`, and for a smaller budget."""
    given = given_flags(parser, argv)
    for dest in sorted(given):
        if dest in FREE or dest == "total_env_steps":
            continue
        flag = _flag(parser, dest)
        keep = (f"--resume continues {resume} with the settings of its config.json; leave "
                f"{flag} out, or start a new run with --out")
        if dest in FIXED:
            raise ValueError(f"{flag}: {keep}")
        try:
            value, own = _stored_value(dest, given, config, stored, resume)
        except KeyError:
            raise ValueError(f"{flag}: {keep}") from None
        if _plain(value) != _plain(own):
            raise ValueError(f"{flag} asks for {_shown(value)}, the run has {_shown(own)}: "
                             f"{keep}")
    budget = given.get("total_env_steps")
    if budget is None or budget == config.total_env_steps:
        return config
    if budget < config.total_env_steps:
        raise ValueError(f"--total-env-steps {budget:,} is below the budget of {resume} "
                         f"({config.total_env_steps:,}): a resumed run cannot be shortened")
    return dataclasses.replace(config, total_env_steps=budget)


def _shown(value: Any) -> str:
    value = _plain(value)
    if isinstance(value, tuple) and all(isinstance(item, tuple) and len(item) == 2
                                        for item in value):
        return ",".join(f"{key}={item}" for key, item in value) or "none"
    if isinstance(value, tuple):
        return " ".join(map(str, value))
    return str(value)
