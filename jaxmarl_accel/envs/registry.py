"""The one registry of environments: one :class:`Scenario` record per scenario.

A record says what the rest of the package asks about a scenario without building it: its
name, its factory, its teams and the keyword that sets each team's size, the keyword that
``--agents`` sets, and a line for help. Each scenario module registers its own record at
its end (``SCENARIO = register_scenario(Scenario(...))``); :mod:`jaxmarl_accel.envs`
imports the package's scenario modules, so a scenario of the package is its module plus
that one import. User code registers a factory with :func:`register_env` (a record is made
for it) or a record with :func:`register_scenario`, or names either on the command line as
``--env package.module:attr``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.user_code import is_reference, load_reference

PACKAGE = "jaxmarl_accel."
"""The module prefix of the package's own scenarios (which user code may not replace)."""


class Team(NamedTuple):
    """One team of a scenario's agents.

    Attributes:
      name: plural, as help writes it, e.g. ``"predators"``.
      count: the keyword of the scenario's factory that sets the team's size (e.g.
        ``"num_predators"``), or its fixed size (the speaker of ``simple_speaker_listener``).
    """

    name: str
    count: str | int


@dataclasses.dataclass(frozen=True, eq=False)
class Scenario:
    """One environment, registered once (:func:`register_scenario`).

    Attributes:
      name: the ``make`` / ``--env`` name.
      make: the factory, ``make(**scenario_kwargs) -> (Env, params)``.
      summary: one line for help and docs.
      teams: its teams, in the order of the agent axis (``()``: not declared, as for a
        factory registered with :func:`register_env`).
      agent_count: the keyword that ``--agents`` sets, one of the teams' count keywords
        (``num_predators`` of ``simple_tag``); ``None``: the scenario has no single count
        (a fixed number of agents, or several counts given by their own keywords).
      counts_total: ``--agents`` is the total over the teams: the other teams keep their
        sizes (given or default) and ``agent_count``'s team takes the rest (WarpDrive's
        Tag: the taggers stay, the runners fill up).
    """

    name: str
    make: Callable[..., tuple[Env, Any]]
    summary: str = ""
    teams: tuple[Team, ...] = ()
    agent_count: str | None = "num_agents"
    counts_total: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or ":" in self.name:
            raise ValueError(f"env name must be a non-empty string without ':', got "
                             f"{self.name!r}")
        if not callable(self.make):
            raise ValueError(f"env {self.name!r}: its factory must be callable, got "
                             f"{type(self.make).__name__}")
        counts = [team.count for team in self.teams]
        if self.teams and self.agent_count is not None and self.agent_count not in counts:
            raise ValueError(f"env {self.name!r}: agent_count {self.agent_count!r} is none of "
                             "its teams' count keywords")
        if self.counts_total and (self.agent_count is None or len(self.teams) < 2):
            raise ValueError(f"env {self.name!r}: counts_total needs an agent_count and teams "
                             "beside its team")

    @property
    def kept_counts(self) -> tuple[str | int, ...]:
        """The counts of the teams other than ``agent_count``'s (keywords or sizes)."""
        return tuple(team.count for team in self.teams if team.count != self.agent_count)


_SCENARIOS: dict[str, Scenario] = {}


def describe_factory(factory: Any) -> str:
    """``module.qualname`` of ``factory``, as errors name it."""
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', '?')}"


def _is_package(record: Scenario) -> bool:
    return getattr(record.make, "__module__", "").startswith(PACKAGE)


def register_scenario(record: Scenario, *, replace: bool = False) -> Scenario:
    """Register ``record`` under ``record.name`` and return it. A one-line ValueError when
    ``record`` is not a :class:`Scenario`, or its name is one of the package's scenarios or
    already registered with another factory (unless ``replace``)."""
    if not isinstance(record, Scenario):
        raise ValueError(f"register_scenario takes a Scenario, got {type(record).__name__}")
    known = _SCENARIOS.get(record.name)
    if known is not None and known.make is not record.make:
        if _is_package(known) and not _is_package(record):
            raise ValueError(f"env {record.name!r} is one of the package's scenarios; choose "
                             "another name")
        if not replace:
            raise ValueError(f"env {record.name!r} is already registered (by "
                             f"{describe_factory(known.make)}); choose another name")
    _SCENARIOS[record.name] = record
    return record


def register_env(name: str, factory: Callable[..., tuple[Env, Any]], *,
                 replace: bool = False) -> None:
    """Make ``factory(**scenario_kwargs) -> (Env, params)`` buildable as ``make(name)`` (and
    ``--env name`` in a program that registered it first): a :class:`Scenario` with no
    declared teams, whose ``--agents`` sets ``num_agents`` if the factory takes it. A
    one-line ValueError when ``name`` is one of the package's scenarios, already registered
    (unless ``replace``), of the ``jaxmarl:`` or ``module:attr`` forms, or ``factory`` is not
    callable."""
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"register_env: name must be a non-empty string without ':', got "
                         f"{name!r}")
    if not callable(factory):
        raise ValueError(f"register_env: factory of {name!r} must be callable, got "
                         f"{type(factory).__name__}")
    register_scenario(Scenario(name=name, make=factory), replace=replace)


def registered_envs() -> tuple[str, ...]:
    """Every name :func:`~jaxmarl_accel.envs.make` builds now: the package's scenarios, then
    those registered from user code."""
    return tuple(_SCENARIOS)


def package_scenarios() -> tuple[str, ...]:
    """The package's own scenarios, in the order their modules registered them."""
    return tuple(name for name, record in _SCENARIOS.items() if _is_package(record))


def is_registered(name: str) -> bool:
    """Whether ``name`` is a registered scenario (not a reference)."""
    return name in _SCENARIOS


def scenario(name: str) -> Scenario:
    """The record of a registered scenario, or of a reference ``package.module:attr`` to a
    factory or a :class:`Scenario` in user code (a factory's record has no declared teams).
    One-line ValueError for anything else."""
    if name in _SCENARIOS:
        return _SCENARIOS[name]
    found = load_reference(name, "env")
    if isinstance(found, Scenario):
        return found
    if not callable(found):
        raise ValueError(f"env {name!r} is an object of type {type(found).__name__}, not a "
                         "factory (a callable returning (Env, params)) or a Scenario")
    return Scenario(name=name.replace(":", "."), make=found)


JAXMARL_PREFIX = "jaxmarl:"
"""The prefix of a JaxMARL env's name (``jaxmarl:<id>``; it has a reference's form, but
names no Python module of the user's)."""


def _record_of(name: str) -> Scenario | None:
    """The record of a registered or referenced scenario; ``None`` for any other name (a
    JaxMARL env ``jaxmarl:<id>``, which has the form of a reference too)."""
    if name in _SCENARIOS:
        return _SCENARIOS[name]
    return scenario(name) if is_reference(name) and not name.startswith(JAXMARL_PREFIX) else None


def agent_count_kwarg(name: str) -> str:
    """The keyword of scenario ``name`` that sets its number of (learning) agents: its
    record's :attr:`Scenario.agent_count` (the predators of ``simple_tag``), ``num_agents``
    for every other env."""
    record = _record_of(name)
    if record is None or record.agent_count is None or record.counts_total:
        return "num_agents"
    return record.agent_count


def counts_total(name: str) -> bool:
    """Whether ``--agents`` of scenario ``name`` is a total over its teams
    (:attr:`Scenario.counts_total`)."""
    record = _record_of(name)
    return record is not None and record.counts_total


def total_count_kwargs(name: str, total: int, given: dict[str, Any]) -> dict[str, Any]:
    """The keywords of scenario ``name`` (:attr:`Scenario.counts_total`) for ``total``
    agents, given its other keywords ``given``: ``given`` with the ``agent_count`` team's
    size set to ``total`` minus the other teams' (given or default); ``ValueError`` (one
    line) when that leaves none."""
    record = _record_of(name)
    if record is None or not record.counts_total:
        raise ValueError(f"env {name!r}: its --agents is not a total over its teams")
    defaults = inspect.signature(record.make).parameters
    kept = sum(count if isinstance(count, int) else given.get(count, defaults[count].default)
               for count in record.kept_counts)
    if total <= kept:
        named = [count for count in record.kept_counts if isinstance(count, str)]
        roles = " and ".join(count.removeprefix("num_") for count in named)
        raise ValueError(f"--agents {total}: {name} keeps its {kept} {roles} "
                         f"({', '.join(named)}) and needs at least one of "
                         f"{record.agent_count}; give more agents or a smaller "
                         f"{' or '.join(named)} in --env-kwargs")
    return {**given, record.agent_count: total - kept}


def is_reference_name(name: str) -> bool:
    """Whether ``name`` is a ``package.module:attr`` reference that is not registered."""
    return name not in _SCENARIOS and is_reference(name)


__all__ = ["JAXMARL_PREFIX", "Scenario", "Team", "agent_count_kwarg", "counts_total",
           "describe_factory", "is_reference_name", "is_registered", "package_scenarios",
           "register_env", "register_scenario", "registered_envs", "scenario", "total_count_kwargs"]
