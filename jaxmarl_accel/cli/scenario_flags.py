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
        TOTAL_COUNT_ENVS,
        agent_count_kwarg,
        make,
        total_count_kwargs,
    )

    keywords = flags.check_scenario_keywords("--env-kwargs", env, (name for name, _ in given))
    kwargs = dict(given)
    if agents is None:
        return tuple(sorted(kwargs.items()))
    if agent_count_kwarg(env) in keywords:
        kwargs[agent_count_kwarg(env)] = agents
        return tuple(sorted(kwargs.items()))
    if env in TOTAL_COUNT_ENVS:
        return tuple(sorted(total_count_kwargs(env, agents, kwargs).items()))
    counts = [name for name in keywords if name.startswith("num_")]
    if counts:
        raise ValueError(f"--agents: {env} has no single agent count; set "
                         f"{' and '.join(counts)} with --env-kwargs")
    fixed = make(env, **kwargs)[0].spec.num_agents
    if agents != fixed:
        raise ValueError(f"--agents {agents}: {env} always has {fixed} agents")
    return tuple(sorted(kwargs.items()))
