"""The scenario's keyword arguments from the command line: ``--env-kwargs`` with ``--agents``.

``jaxmarl-accel run`` and ``jaxmarl-accel render`` (and the experiments that build a run's
config) read the same two flags; both turn them into ``make``'s keywords here. The module
imports nothing of JAX at import time, so that ``run`` can parse its multi-host flags and
call ``jax.distributed.initialize()`` before any scenario module is loaded.
"""

from __future__ import annotations

from typing import Any

from jaxmarl_accel.cli import flags


def scenario_kwargs(env: str, given: tuple[tuple[str, Any], ...],
                    agents: int | None) -> tuple[tuple[str, Any], ...]:
    """``--env-kwargs`` with ``--agents`` written as the scenario's count keyword;
    ``ValueError`` (one line) for a keyword the scenario does not take, or an ``--agents``
    that it cannot express."""
    from jaxmarl_accel.envs import (  # deferred: the scenarios load JAX
        agent_count_kwarg,
        counts_total,
        make,
        total_count_kwargs,
    )

    keywords = flags.check_scenario_keywords("--env-kwargs", env, (name for name, _ in given))
    kwargs = dict(given)
    if agents is None:
        return tuple(sorted(kwargs.items()))
    if counts_total(env):
        return tuple(sorted(total_count_kwargs(env, agents, kwargs).items()))
    if agent_count_kwarg(env) in keywords:
        kwargs[agent_count_kwarg(env)] = agents
        return tuple(sorted(kwargs.items()))
    counts = [name for name in keywords if name.startswith("num_")]
    if counts:
        raise ValueError(f"--agents: {env} has no single agent count; set "
                         f"{' and '.join(counts)} with --env-kwargs")
    fixed = make(env, **kwargs)[0].spec.num_agents
    if agents != fixed:
        raise ValueError(f"--agents {agents}: {env} always has {fixed} agents")
    return tuple(sorted(kwargs.items()))


def agents_help() -> str:
    """The ``--agents`` help, read from the package's scenario records
    (:class:`~jaxmarl_accel.envs.Scenario`): which keyword each scenario's count is."""
    from jaxmarl_accel.envs import SCENARIOS, scenario  # deferred: the scenarios load JAX

    records = [scenario(name) for name in SCENARIOS]
    single: dict[str, list[str]] = {}
    for record in records:
        if record.agent_count is not None and not record.counts_total:
            single.setdefault(record.agent_count, []).append(record.name)
    parts = ["number of agents: " + "; ".join(f"{keyword} of {', '.join(names)}"
                                              for keyword, names in single.items())]
    total = [record for record in records if record.counts_total]
    if total:
        kept = ", ".join(sorted({str(c) for r in total for c in r.kept_counts}))
        rest = ", ".join(sorted({r.agent_count for r in total}))
        first = total[0]
        named = [team for team in first.teams if team.count != first.agent_count]
        grown = next(team for team in first.teams if team.count == first.agent_count)
        example = (f"--agents 12 --env-kwargs {named[0].count}=2 is 2 {named[0].name} and "
                   f"10 {grown.name}" if len(named) == 1 else "")
        parts.append(f"the total of {', '.join(r.name for r in total)} (their {kept} stay as "
                     f"given or default, {rest} are the rest{': ' if example else ''}{example})")
    fixed = [f"{r.name}: {sum(t.count for t in r.teams)}" for r in records
             if r.agent_count is None and all(isinstance(t.count, int) for t in r.teams)]
    several = [f"{r.name}: {', '.join(str(t.count) for t in r.teams)}" for r in records
               if r.agent_count is None and any(isinstance(t.count, str) for t in r.teams)]
    if fixed:
        parts.append(f"scenarios with a fixed count ({'; '.join(fixed)}) accept only that "
                     "count")
    if several:
        parts.append(f"scenarios with several counts ({'; '.join(several)}) take them in "
                     "--env-kwargs")
    parts.append("an env by reference or from JaxMARL: num_agents, if its factory takes it")
    return "; ".join(parts)
