"""Pure-function MPE scenarios on one shared physics core, the grid stag hunt
(:mod:`~jaxmarl_accel.envs.stag_hunt`), and the registry :func:`make`.

``env, params = make("simple_spread", num_agents=6)`` builds a scenario: ``env`` is a static
:class:`Env` bundle of pure functions, ``params`` a pytree of its numeric settings.

Episode length: ``params.episode_length`` (traced) is the live value: it decides truncation,
and :func:`~.evaluate.evaluate_policy` and other one-episode rollouts take their (static)
length from it by default. ``spec.episode_length`` is only the make-time default (the value
given to ``make``, 25 unless set): it is static and does not follow ``params.replace``.

Adding a scenario: write ``jaxmarl_accel/envs/<name>.py`` with a function
``make(**scenario_kwargs) -> (Env, params)`` (assemble it with
:func:`jaxmarl_accel.envs.scenario.build_env` on the physics of :mod:`jaxmarl_accel.envs.core`
and the action decoding and scripted steering of :mod:`jaxmarl_accel.envs.moves`, or build
the :class:`Env` directly as :mod:`~jaxmarl_accel.envs.stag_hunt` does), then add one line
``"<name>": "jaxmarl_accel.envs.<name>",`` to ``_SCENARIOS`` below. Modules are imported on
first use, so a scenario's import cost is paid only by those who make it.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.rollout import Rollout, rollout

_SCENARIOS: dict[str, str] = {
    "simple_spread": "jaxmarl_accel.envs.simple_spread",
    "simple_tag": "jaxmarl_accel.envs.simple_tag",
    "simple_speaker_listener": "jaxmarl_accel.envs.simple_speaker_listener",
    "simple_adversary": "jaxmarl_accel.envs.simple_adversary",
    "simple_push": "jaxmarl_accel.envs.simple_push",
    "simple_reference": "jaxmarl_accel.envs.simple_reference",
    "stag_hunt": "jaxmarl_accel.envs.stag_hunt",
    "tag_gridworld": "jaxmarl_accel.envs.tag_gridworld",
    "tag_continuous": "jaxmarl_accel.envs.tag_continuous",
}

SCENARIOS: tuple[str, ...] = tuple(_SCENARIOS)

_AGENT_COUNT_KWARGS: dict[str, str] = {"simple_tag": "num_predators"}


def agent_count_kwarg(name: str) -> str:
    """The keyword of scenario ``name`` that sets its number of (learning) agents: the
    predators of ``simple_tag``, ``num_agents`` elsewhere."""
    return _AGENT_COUNT_KWARGS.get(name, "num_agents")


def scenario_keywords(name: str) -> tuple[str, ...]:
    """The keyword arguments that scenario ``name``'s ``make`` accepts."""
    if name not in _SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; valid names: {', '.join(SCENARIOS)}")
    module = importlib.import_module(_SCENARIOS[name])
    return tuple(inspect.signature(module.make).parameters)


def make(name: str, **scenario_kwargs: Any) -> tuple[Env, Any]:
    """Builds the scenario ``name`` with its keyword arguments.

    Args:
      name: one of :data:`SCENARIOS`.
      **scenario_kwargs: passed to the scenario module's ``make`` (e.g. ``num_agents``,
        ``continuous_actions``, ``episode_length``, ``k_nearest``).

    Returns:
      ``(env, params)``: the :class:`Env` and its params pytree.
    """
    if name not in _SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; valid names: {', '.join(SCENARIOS)}")
    module = importlib.import_module(_SCENARIOS[name])
    return module.make(**scenario_kwargs)


__all__ = ["SCENARIOS", "Env", "EnvSpec", "Rollout", "agent_count_kwarg", "make", "rollout",
           "scenario_keywords"]
