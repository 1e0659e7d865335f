"""Pure-function MPE scenarios on one shared physics core, the grid stag hunt
(:mod:`~jaxmarl_accel.envs.stag_hunt`), and the registry :func:`make`.

``env, params = make("simple_spread", num_agents=6)`` builds a scenario: ``env`` is a static
:class:`Env` bundle of pure functions, ``params`` a pytree of its numeric settings.

Episode length: ``params.episode_length`` (traced) is the live value: it decides truncation,
and :func:`~.evaluate.evaluate_policy` and other one-episode rollouts take their (static)
length from it by default. ``spec.episode_length`` is only the make-time default (the value
given to ``make``, 25 unless set): it is static and does not follow ``params.replace``.

Your own environment, with no file inside this package: write a factory
``make(**scenario_kwargs) -> (Env, params)`` in your module (``examples/custom_env.py`` is a
worked one; the fields of :class:`Env` and :class:`EnvSpec` are the contract), then either
``register_env("my_env", make)`` and ``make("my_env")``, or name it by reference:
``make("my_package.my_module:make")`` and, on the command line, ``--env
my_package.my_module:make``. A scenario of this package: write
``jaxmarl_accel/envs/<name>.py`` (an MPE one in ``envs/mpe/``, assembled with
:func:`jaxmarl_accel.envs.mpe.scenario.build_env` on the physics of
:mod:`jaxmarl_accel.envs.mpe.core` and the action decoding and scripted steering of
:mod:`jaxmarl_accel.envs.moves`, or an :class:`Env` built directly as
:mod:`~jaxmarl_accel.envs.stag_hunt` does), then add one line
``"<name>": "jaxmarl_accel.envs.<name>",`` to ``_SCENARIOS`` below. Modules are imported on
first use, so a scenario's import cost is paid only by those who make it.

JaxMARL's environments: ``make("jaxmarl:<id>", **kwargs)`` wraps ``jaxmarl.make(<id>,
**kwargs)`` (:mod:`~jaxmarl_accel.envs.jaxmarl_env`, which imports ``jaxmarl`` on first use).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.rollout import Rollout, rollout
from jaxmarl_accel.user_code import is_reference, load_reference

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
"""The package's own scenarios."""

_REGISTERED: dict[str, Callable[..., tuple[Env, Any]]] = {}
"""Environments registered from user code (:func:`register_env`): name -> factory."""


def register_env(name: str, factory: Callable[..., tuple[Env, Any]], *,
                 replace: bool = False) -> None:
    """Make ``factory(**scenario_kwargs) -> (Env, params)`` buildable as ``make(name)`` (and
    ``--env name`` in a program that registered it first). A one-line ValueError when
    ``name`` is one of the package's scenarios, already registered (unless ``replace``), of
    the ``jaxmarl:`` or ``module:attr`` forms, or ``factory`` is not callable."""
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"register_env: name must be a non-empty string without ':', got "
                         f"{name!r}")
    if name in _SCENARIOS:
        raise ValueError(f"env {name!r} is one of the package's scenarios; choose another name")
    if name in _REGISTERED and _REGISTERED[name] is not factory and not replace:
        raise ValueError(f"env {name!r} is already registered (by {_describe(_REGISTERED[name])});"
                         " choose another name")
    if not callable(factory):
        raise ValueError(f"register_env: factory of {name!r} must be callable, got "
                         f"{type(factory).__name__}")
    _REGISTERED[name] = factory


def registered_envs() -> tuple[str, ...]:
    """Every name :func:`make` builds now: the package's scenarios, then those registered."""
    return (*_SCENARIOS, *_REGISTERED)


def _describe(factory: Any) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', '?')}"


def _factory(name: str) -> Callable[..., tuple[Env, Any]]:
    """The factory of a registered or referenced (``module:attr``) environment."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    factory = load_reference(name, "env")
    if not callable(factory):
        raise ValueError(f"env {name!r} is an object of type {type(factory).__name__}, not a "
                         "factory (a callable returning (Env, params))")
    return factory


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
    """``name`` is a registered scenario (:func:`registered_envs`) or has the form
    ``jaxmarl:<id>`` or ``package.module:factory`` (the id or the factory is checked when
    the env is made)."""
    return (name in _SCENARIOS or name in _REGISTERED or is_reference(name)
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


def scenario_keywords(name: str) -> tuple[str, ...] | None:
    """The keyword arguments that scenario ``name``'s ``make`` accepts, or ``None`` for a
    ``jaxmarl:<id>`` env whose keywords cannot be read (it cannot be built with its
    defaults: it needs arguments or an optional package)."""
    if name.startswith(JAXMARL_PREFIX):
        return _jaxmarl_module().keywords(name[len(JAXMARL_PREFIX):])
    if name in _REGISTERED or (name not in _SCENARIOS and is_reference(name)):
        return tuple(inspect.signature(_factory(name)).parameters)
    if name not in _SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; valid names: {', '.join(SCENARIOS)}")
    module = importlib.import_module(_SCENARIOS[name])
    return tuple(inspect.signature(module.make).parameters)


def make(name: str, **scenario_kwargs: Any) -> tuple[Env, Any]:
    """Builds the scenario ``name`` with its keyword arguments.

    Args:
      name: one of :data:`SCENARIOS`, a name given to :func:`register_env`,
        ``"jaxmarl:<id>"`` for JaxMARL's env ``<id>``, or ``"package.module:factory"`` for a
        factory in user code (the working folder is searched first).
      **scenario_kwargs: passed to the scenario's factory (e.g. ``num_agents``,
        ``continuous_actions``, ``episode_length``, ``k_nearest``).

    Returns:
      ``(env, params)``: the :class:`Env` and its params pytree. A one-line ValueError for
      an unknown name or a factory that returns anything else.
    """
    if name.startswith(JAXMARL_PREFIX):
        return _jaxmarl_module().make(name[len(JAXMARL_PREFIX):], **scenario_kwargs)
    if name in _REGISTERED or (name not in _SCENARIOS and is_reference(name)):
        factory = _factory(name)
        try:
            made = factory(**scenario_kwargs)
        except Exception as error:  # the user's factory: its own error, in one line
            raise ValueError(f"env {name!r}: its factory {_describe(factory)} raised "
                             + " ".join(f"{type(error).__name__}: {error}".split())) from error
        return _checked(name, made)
    if name not in _SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; valid names: "
                         f"{', '.join(registered_envs())}, {JAXMARL_PREFIX}<id> for a JaxMARL "
                         "env, or package.module:factory for your own")
    module = importlib.import_module(_SCENARIOS[name])
    return module.make(**scenario_kwargs)


__all__ = ["ENV_NAMES", "JAXMARL_PREFIX", "SCENARIOS", "Env", "EnvSpec", "Rollout",
           "TOTAL_COUNT_ENVS", "agent_count_kwarg", "is_valid_name", "make", "register_env",
           "registered_envs", "rollout", "scenario_keywords", "total_count_kwargs"]
