"""Pure-function MPE scenarios on one shared physics core, the grid stag hunt
(:mod:`~jaxmarl_accel.envs.stag_hunt`), and the registry :func:`make`.

``env, params = make("simple_spread", num_agents=6)`` builds a scenario: ``env`` is a static
:class:`Env` bundle of pure functions, ``params`` a pytree of its numeric settings.

Episode length: ``params.episode_length`` (traced) is the live value: it decides truncation,
and :func:`~.evaluate.evaluate_policy` and other one-episode rollouts take their (static)
length from it by default. ``spec.episode_length`` is only the make-time default (the value
given to ``make``, 25 unless set): it is static and does not follow ``params.replace``.

Adding a scenario: write ``jaxmarl_accel/envs/<name>.py`` (an MPE one in ``envs/mpe/``) with
a function ``make(**scenario_kwargs) -> (Env, params)`` (assemble it with
:func:`jaxmarl_accel.envs.mpe.scenario.build_env` on the physics of
:mod:`jaxmarl_accel.envs.mpe.core` and the action decoding and scripted steering of
:mod:`jaxmarl_accel.envs.moves`, or build the :class:`Env` directly as
:mod:`~jaxmarl_accel.envs.stag_hunt` does), then add one line
``"<name>": "jaxmarl_accel.envs.<name>",`` to ``_SCENARIOS`` below. Modules are imported on
first use, so a scenario's import cost is paid only by those who make it.

JaxMARL's environments: ``make("jaxmarl:<id>", **kwargs)`` wraps ``jaxmarl.make(<id>,
**kwargs)`` (:mod:`~jaxmarl_accel.envs.jaxmarl_env`, which imports ``jaxmarl`` on first use).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.rollout import Rollout, rollout

_SCENARIOS: dict[str, str] = {
    "simple_spread": "jaxmarl_accel.envs.mpe.simple_spread",
    "simple_tag": "jaxmarl_accel.envs.mpe.simple_tag",
    "simple_speaker_listener": "jaxmarl_accel.envs.mpe.simple_speaker_listener",
    "simple_adversary": "jaxmarl_accel.envs.mpe.simple_adversary",
    "simple_push": "jaxmarl_accel.envs.mpe.simple_push",
    "simple_reference": "jaxmarl_accel.envs.mpe.simple_reference",
    "stag_hunt": "jaxmarl_accel.envs.stag_hunt",
    "tag_gridworld": "jaxmarl_accel.envs.tag_gridworld",
    "tag_continuous": "jaxmarl_accel.envs.tag_continuous",
}

SCENARIOS: tuple[str, ...] = tuple(_SCENARIOS)

_AGENT_COUNT_KWARGS: dict[str, str] = {"simple_tag": "num_predators"}

TOTAL_COUNT_ENVS: dict[str, tuple[str, str]] = {
    "tag_gridworld": ("num_taggers", "num_runners"),
    "tag_continuous": ("num_taggers", "num_runners"),
}
"""Scenarios whose agent count is a total over two roles, ``(fixed, rest)``: a total of
``N`` agents keeps the ``fixed`` role's count (given or its default) and makes the rest
the other role (WarpDrive's Tag: the taggers stay, the runners fill up to ``N``)."""


def total_count_kwargs(name: str, total: int, given: dict[str, Any]) -> dict[str, Any]:
    """The keywords of scenario ``name`` (in :data:`TOTAL_COUNT_ENVS`) for ``total`` agents,
    given its other keywords ``given``: ``given`` with the ``rest`` role's count set to
    ``total`` minus the ``fixed`` role's; ``ValueError`` (one line) when that leaves none."""
    fixed, rest = TOTAL_COUNT_ENVS[name]
    module = importlib.import_module(_SCENARIOS[name])
    kept = given.get(fixed, inspect.signature(module.make).parameters[fixed].default)
    if total <= kept:
        raise ValueError(f"--agents {total}: {name} keeps its {kept} {fixed.removeprefix('num_')} "
                         f"({fixed}) and needs at least one of {rest}; give more agents or a "
                         f"smaller {fixed} in --env-kwargs")
    return {**given, rest: total - kept}


def agent_count_kwarg(name: str) -> str:
    """The keyword of scenario ``name`` that sets its number of (learning) agents: the
    predators of ``simple_tag``, ``num_agents`` elsewhere."""
    return _AGENT_COUNT_KWARGS.get(name, "num_agents")


JAXMARL_PREFIX = "jaxmarl:"


def is_valid_name(name: str) -> bool:
    """``name`` is one of :data:`SCENARIOS` or has the form ``jaxmarl:<id>`` (the id itself
    is checked when the env is made)."""
    return name in _SCENARIOS or (name.startswith(JAXMARL_PREFIX) and len(name) > 8)


class EnvNames(tuple):
    """The valid ``--env`` values for a command line's ``choices``: iterates over
    :data:`SCENARIOS` and ``jaxmarl:<id>`` (as shown in help), and contains every name
    :func:`is_valid_name` accepts."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and is_valid_name(name)


ENV_NAMES = EnvNames((*SCENARIOS, f"{JAXMARL_PREFIX}<id>"))


def _jaxmarl_module() -> Any:
    return importlib.import_module("jaxmarl_accel.envs.jaxmarl_env")


def scenario_keywords(name: str) -> tuple[str, ...] | None:
    """The keyword arguments that scenario ``name``'s ``make`` accepts, or ``None`` for a
    ``jaxmarl:<id>`` env whose keywords cannot be read (it cannot be built with its
    defaults: it needs arguments or an optional package)."""
    if name.startswith(JAXMARL_PREFIX):
        return _jaxmarl_module().keywords(name[len(JAXMARL_PREFIX):])
    if name not in _SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; valid names: {', '.join(SCENARIOS)}")
    module = importlib.import_module(_SCENARIOS[name])
    return tuple(inspect.signature(module.make).parameters)


def make(name: str, **scenario_kwargs: Any) -> tuple[Env, Any]:
    """Builds the scenario ``name`` with its keyword arguments.

    Args:
      name: one of :data:`SCENARIOS`, or ``"jaxmarl:<id>"`` for JaxMARL's env ``<id>``.
      **scenario_kwargs: passed to the scenario module's ``make`` (e.g. ``num_agents``,
        ``continuous_actions``, ``episode_length``, ``k_nearest``).

    Returns:
      ``(env, params)``: the :class:`Env` and its params pytree.
    """
    if name.startswith(JAXMARL_PREFIX):
        return _jaxmarl_module().make(name[len(JAXMARL_PREFIX):], **scenario_kwargs)
    if name not in _SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; valid names: {', '.join(SCENARIOS)}, "
                         f"or {JAXMARL_PREFIX}<id> for a JaxMARL env")
    module = importlib.import_module(_SCENARIOS[name])
    return module.make(**scenario_kwargs)


__all__ = ["ENV_NAMES", "JAXMARL_PREFIX", "SCENARIOS", "Env", "EnvSpec", "Rollout",
           "TOTAL_COUNT_ENVS", "agent_count_kwarg", "is_valid_name", "make", "rollout",
           "scenario_keywords", "total_count_kwargs"]
