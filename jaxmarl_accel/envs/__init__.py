"""Pure-function MPE scenarios on one shared physics core, the grid stag hunt
(:mod:`~jaxmarl_accel.envs.stag_hunt`), and the registry :func:`make`.

``env, params = make("simple_spread", num_agents=6)`` builds a scenario: ``env`` is a static
:class:`Env` bundle of pure functions, ``params`` a pytree of its numeric settings.

Episode length: ``params.episode_length`` (traced) is the live value: it decides truncation,
and :func:`~.evaluate.evaluate_policy` and other one-episode rollouts take their (static)
length from it by default. ``spec.episode_length`` is only the make-time default (the value
given to ``make``, 25 unless set): it is static and does not follow ``params.replace``.

Every scenario is one :class:`~.registry.Scenario` record (name, factory, teams, the keyword
``--agents`` sets, a summary) in the one registry :mod:`~.registry`; the names, the agent
counts and the command line's ``--agents`` help are read from the records.

Your own environment, with no file inside this package: write a factory
``make(**scenario_kwargs) -> (Env, params)`` in your module (``examples/custom_env.py`` is a
worked one; the fields of :class:`Env` and :class:`EnvSpec` are the contract), then either
``register_env("my_env", make)`` (or ``register_scenario(Scenario(...))`` to declare its
teams and count keyword) and ``make("my_env")``, or name the factory or the record by
reference: ``make("my_package.my_module:make")`` and, on the command line, ``--env
my_package.my_module:make``. A scenario of this package: write
``jaxmarl_accel/envs/<name>.py`` (an MPE one in ``envs/mpe/``, assembled with
:func:`jaxmarl_accel.envs.mpe.scenario.build_env` on the physics of
:mod:`jaxmarl_accel.envs.mpe.core` and the action decoding and scripted steering of
:mod:`jaxmarl_accel.envs.moves`, or an :class:`Env` built directly as
:mod:`~jaxmarl_accel.envs.stag_hunt` does) ending with its record,
``SCENARIO = register_scenario(Scenario(...))``, and import the module below.

JaxMARL's environments: ``make("jaxmarl:<id>", **kwargs)`` wraps ``jaxmarl.make(<id>,
**kwargs)`` (:mod:`~jaxmarl_accel.envs.jaxmarl_env`, which imports ``jaxmarl`` on first use).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.registry import (
    JAXMARL_PREFIX,
    Scenario,
    Team,
    agent_count_kwarg,
    counts_total,
    describe_factory,
    is_reference_name,
    is_registered,
    package_scenarios,
    register_env,
    register_scenario,
    registered_envs,
    scenario,
    total_count_kwargs,
)
from jaxmarl_accel.envs.rollout import Rollout, rollout
from jaxmarl_accel.user_code import is_reference

# each scenario module registers its record; this order is SCENARIOS's
# isort: off
from jaxmarl_accel.envs.mpe import simple_spread as _simple_spread  # noqa: F401
from jaxmarl_accel.envs.mpe import simple_tag as _simple_tag  # noqa: F401
from jaxmarl_accel.envs.mpe import simple_speaker_listener as _speaker  # noqa: F401
from jaxmarl_accel.envs.mpe import simple_adversary as _simple_adversary  # noqa: F401
from jaxmarl_accel.envs.mpe import simple_push as _simple_push  # noqa: F401
from jaxmarl_accel.envs.mpe import simple_reference as _simple_reference  # noqa: F401
from jaxmarl_accel.envs import stag_hunt as _stag_hunt  # noqa: F401
from jaxmarl_accel.envs import tag_gridworld as _tag_gridworld  # noqa: F401
from jaxmarl_accel.envs import tag_continuous as _tag_continuous  # noqa: F401
# isort: on

SCENARIOS: tuple[str, ...] = package_scenarios()
"""The package's own scenarios."""


def _checked(name: str, made: Any) -> tuple[Env, Any]:
    """``made`` if it is ``(Env, params)``; a one-line ValueError naming what it is."""
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], Env)):
        got = (f"a tuple of {', '.join(type(m).__name__ for m in made)}"
               if isinstance(made, tuple) else f"an object of type {type(made).__name__}")
        raise ValueError(f"env {name!r}: its factory returned {got}, not (Env, params) "
                         "(jaxmarl_accel.envs.Env)")
    if not isinstance(made[0].spec, EnvSpec):
        raise ValueError(f"env {name!r}: its Env's spec is a {type(made[0].spec).__name__}, "
                         "not an EnvSpec")
    return made


def is_valid_name(name: str) -> bool:
    """``name`` is a registered scenario (:func:`registered_envs`) or has the form
    ``jaxmarl:<id>`` or ``package.module:factory`` (the id or the factory is checked when
    the env is made)."""
    return (is_registered(name) or is_reference(name)
            or (name.startswith(JAXMARL_PREFIX) and len(name) > 8))


class EnvNames(tuple):
    """The valid ``--env`` values for a command line's ``choices``: iterates over
    :data:`SCENARIOS`, ``jaxmarl:<id>`` and ``package.module:factory`` (as shown in help),
    and contains every name :func:`is_valid_name` accepts."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and is_valid_name(name)


ENV_NAMES = EnvNames((*SCENARIOS, f"{JAXMARL_PREFIX}<id>", "package.module:factory"))


def _jaxmarl_module() -> Any:
    return importlib.import_module("jaxmarl_accel.envs.jaxmarl_env")


def _unknown(name: str) -> ValueError:
    return ValueError(f"unknown scenario {name!r}; valid names: "
                      f"{', '.join(registered_envs())}, {JAXMARL_PREFIX}<id> for a JaxMARL "
                      "env, or package.module:factory for your own")


def scenario_keywords(name: str) -> tuple[str, ...] | None:
    """The keyword arguments that scenario ``name``'s ``make`` accepts, or ``None`` for a
    ``jaxmarl:<id>`` env whose keywords cannot be read (it cannot be built with its
    defaults: it needs arguments or an optional package)."""
    if name.startswith(JAXMARL_PREFIX):
        return _jaxmarl_module().keywords(name[len(JAXMARL_PREFIX):])
    if not is_valid_name(name):
        raise _unknown(name)
    return tuple(inspect.signature(scenario(name).make).parameters)


def make(name: str, **scenario_kwargs: Any) -> tuple[Env, Any]:
    """Builds the scenario ``name`` with its keyword arguments.

    Args:
      name: one of :data:`SCENARIOS`, a name given to :func:`register_env`,
        ``"jaxmarl:<id>"`` for JaxMARL's env ``<id>``, or ``"package.module:factory"`` for a
        factory (or a :class:`Scenario`) in user code (the working folder is searched first).
      **scenario_kwargs: passed to the scenario's factory (e.g. ``num_agents``,
        ``continuous_actions``, ``episode_length``, ``k_nearest``).

    Returns:
      ``(env, params)``: the :class:`Env` and its params pytree. A one-line ValueError for
      an unknown name or a factory that returns anything else.
    """
    if name.startswith(JAXMARL_PREFIX):
        return _jaxmarl_module().make(name[len(JAXMARL_PREFIX):], **scenario_kwargs)
    if not (is_registered(name) or is_reference_name(name)):
        raise _unknown(name)
    factory = scenario(name).make
    if name in SCENARIOS:  # the package's own: its errors as they are
        return factory(**scenario_kwargs)
    try:
        made = factory(**scenario_kwargs)
    except Exception as error:  # the user's factory: its own error, in one line
        raise ValueError(f"env {name!r}: its factory {describe_factory(factory)} raised "
                         + " ".join(f"{type(error).__name__}: {error}".split())) from error
    return _checked(name, made)


__all__ = ["ENV_NAMES", "JAXMARL_PREFIX", "SCENARIOS", "Env", "EnvSpec", "Rollout", "Scenario",
           "Team", "agent_count_kwarg", "counts_total", "is_valid_name", "make",
           "register_env", "register_scenario", "registered_envs", "rollout", "scenario",
           "scenario_keywords", "total_count_kwargs"]
