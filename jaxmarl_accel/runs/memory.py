"""The memory check every command runs before allocating: needs X GiB, Y GiB available.

The library only counts bytes (pure: :func:`jaxmarl_accel.buffers.estimate_bytes`, or the
abstract training state from ``jax.eval_shape``); asking the machine how much memory is
free, and refusing, happens here, once, for ``run``, ``characterize`` and ``bench``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax

from jaxmarl_accel.tree_util import tree_leaf_bytes


def available_bytes() -> tuple[int, str]:
    """Free memory where the state will live, and where that figure comes from.

    Uses the default device's ``memory_stats()`` (accelerators); on CPU, where JAX gives no
    statistics, the host's available memory (``/proc/meminfo`` MemAvailable, else sysconf).
    """
    device = jax.local_devices()[0]
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        free = int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
        return free, f"{device} memory_stats"
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, f"{device} (host MemAvailable)"
    except OSError:
        pass
    pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return int(pages), f"{device} (host sysconf)"


def ensure_fits(needed_bytes: int, what: str, hint: str | Callable[[], str],
                fraction: float = 1.0) -> None:
    """Raise ``ValueError`` (one line) when ``needed_bytes`` exceed ``fraction`` of the
    memory available now: "<what> needs X GiB but only Y GiB are available on <where>;
    <hint>" (``hint`` a text, or a function giving it, called only to refuse)."""
    free, where = available_bytes()
    if needed_bytes > fraction * free:
        hint = hint() if callable(hint) else hint
        raise ValueError(f"{what} needs {needed_bytes / 2**30:.2f} GiB but only "
                         f"{free / 2**30:.2f} GiB are available on {where}; {hint}")


FIXED_BYTES = int(0.75 * 2**30)
"""Peak resident memory of a run beside its training state, on the CPU: Python, JAX, XLA,
the compiled chunk, the evaluation and baselines (``python -m experiments.bench memory``)."""

STATE_FACTOR = 1.0
"""Peak resident bytes per byte of training state, on the CPU (the same benchmark): the state
itself, the chunk's temporaries that grow with it, and nothing for checkpoints, which are
written from the state's own buffers (:mod:`jaxmarl_accel.runs.checkpoint`)."""

DEVICE_MARGIN = 0.10
"""Share of device memory kept free beside the state on accelerators (XLA's temporaries)."""


def estimate_peak(state_bytes: int, on_host: bool = True, temp_bytes: int = 0) -> int:
    """Estimated peak memory of a run whose training state takes ``state_bytes`` where it
    lives and whose compiled chunk needs ``temp_bytes`` of temporaries (XLA's memory
    analysis; 0 before compiling): on the host, :data:`FIXED_BYTES` plus
    :data:`STATE_FACTOR` times the state plus the temporaries; on an accelerator, the state
    plus :data:`DEVICE_MARGIN` of it plus the temporaries."""
    if on_host:
        return FIXED_BYTES + int(STATE_FACTOR * state_bytes) + temp_bytes
    return int((1 + DEVICE_MARGIN) * state_bytes) + temp_bytes


def compiled_temp_bytes(compiled: Any) -> int:
    """Temporary buffers a compiled program needs beside its arguments and outputs (XLA's
    ``memory_analysis``; 0 where the backend reports none). Large for learners whose
    update grows with the agents (e.g. every agent of a batch of 1,000-agent joint steps)."""
    try:
        analysis = compiled.memory_analysis()
    except (AttributeError, NotImplementedError, RuntimeError):
        return 0
    return int(getattr(analysis, "temp_size_in_bytes", 0) or 0) if analysis else 0


def check_state_fits(abstract_state: Any, seeds: int, seed_shards: int = 1,
                     temp_bytes: int = 0, config: Any = None, settings: int = 1
                     ) -> tuple[int, int]:
    """Refuse (ValueError, one line) before allocating when a run cannot fit; returns the
    training state's bytes and the run's estimated peak (:func:`estimate_peak`).

    Called once before compiling (``temp_bytes`` 0) and, where the chunk is compiled
    before the state exists, again with the compiled chunk's temporaries
    (:func:`compiled_temp_bytes`). With the seeds split over ``seed_shards`` devices each
    holds ``1 / seed_shards`` of the state. The message states the estimate's parts and how
    it was calibrated, and what to lower (:func:`fit_hint`; with the run's ``config``, the
    flags that apply to its learner and scenario). A sweep's ``seeds`` are its lanes,
    ``settings`` x seeds per setting (:mod:`jaxmarl_accel.trainer.sweep`).
    """
    state = tree_leaf_bytes(abstract_state)
    on_host = "host" in available_bytes()[1]
    per_device = state if on_host else state // seed_shards
    needed = estimate_peak(per_device, on_host, temp_bytes)
    temps = (f" + {temp_bytes / 2**30:.2f} GiB of the compiled chunk's temporaries"
             if temp_bytes else "")
    if on_host:
        how = (f"an estimated peak: the state {state / 2**30:.2f} GiB x {STATE_FACTOR:g} + "
               f"{FIXED_BYTES / 2**30:.2f} GiB for Python, JAX and the compiled program"
               f"{temps}, as measured by experiments.bench memory")
    else:
        how = (f"per device: the state {per_device / 2**30:.2f} GiB + "
               f"{DEVICE_MARGIN:.0%} for XLA's temporaries{temps}")
    what = (f"the run of {seeds} seed(s)" if settings == 1 else
            f"the sweep of {settings} settings x {seeds // settings} seed(s)")
    fewer = "; or sweep fewer settings" if settings > 1 else ""
    ensure_fits(needed, f"{what} ({how})", lambda: fit_hint(config, temp_bytes) + fewer)
    return state, needed


def fit_hint(config: Any, temp_bytes: int = 0) -> str:
    """What to lower when a run does not fit: its replay kind's flags
    (``RoundSpec.memory_hint``: the replay's, or for learners without a replay the
    rollout's), and ``use_full_observation=false`` where the scenario's observations grow
    with the agents (:func:`observation_hint`). ``config``: the run's ``TrainConfig``, or
    None (the replay's flags)."""
    from jaxmarl_accel.trainer.rounds import TRANSITION, round_of

    kind = TRANSITION if config is None else round_of(config)
    hint = f"{kind.memory_hint} ({kind.temporaries_hint})" if temp_bytes else kind.memory_hint
    observation = observation_hint(config) if config is not None else None
    return hint if observation is None else f"{hint}; {observation}"


def observation_hint(config: Any) -> str | None:
    """For a scenario with full observations (``use_full_observation``, the Tag envs:
    every agent observes every agent, ``[N, O(N)]`` per env, O(N^2)), the ``--env-kwargs``
    that gives each agent a fixed-size observation instead, with both sizes; else None."""
    from jaxmarl_accel.envs import make, scenario_keywords

    if "use_full_observation" not in (scenario_keywords(config.env) or ()):
        return None
    kwargs = dict(config.env_kwargs)
    full = make(config.env, **kwargs)[0].spec
    try:
        partial = make(config.env, **{**kwargs, "use_full_observation": False})[0].spec
    except ValueError:  # e.g. more nearest agents observed than the scenario has
        return None
    if partial.obs_dim >= full.obs_dim:
        return None
    return (f"or --env-kwargs use_full_observation=false: each of the {full.num_agents:,} "
            f"agents then observes {partial.obs_dim} values instead of {full.obs_dim:,} "
            "(every agent's: memory grows with the square of the agents)")
