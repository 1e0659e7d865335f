"""The memory check every command runs before allocating: needs X GiB, Y GiB available.

The library only counts bytes (pure: :func:`jaxmarl_accel.buffers.estimate_bytes`, or the
abstract training state from ``jax.eval_shape``); asking the machine how much memory is
free, and refusing, happens here, once, for ``run``, ``characterize`` and ``bench``.
"""

from __future__ import annotations

import os
from typing import Any

import jax

from jaxmarl_accel.buffers.storage import tree_leaf_bytes


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


def ensure_fits(needed_bytes: int, what: str, hint: str, fraction: float = 1.0) -> None:
    """Raise ``ValueError`` (one line) when ``needed_bytes`` exceed ``fraction`` of the
    memory available now: "<what> needs X GiB but only Y GiB are available on <where>;
    <hint>"."""
    free, where = available_bytes()
    if needed_bytes > fraction * free:
        raise ValueError(f"{what} needs {needed_bytes / 2**30:.2f} GiB but only "
                         f"{free / 2**30:.2f} GiB are available on {where}; {hint}")


def check_state_fits(abstract_state: Any, seeds: int, seed_shards: int = 1,
                     checkpoints: bool = True) -> int:
    """Refuse (ValueError) before compiling when a training state cannot fit; returns its
    bytes.

    With the seeds split over ``seed_shards`` devices each holds ``1 / seed_shards`` of the
    state. Saving a checkpoint copies the whole state into host memory, so on the CPU
    (where device and host memory are one) a run that checkpoints needs twice the state.
    A margin of 10% is kept for the program itself.
    """
    needed = tree_leaf_bytes(abstract_state)
    on_host = "host" in available_bytes()[1]
    copy = on_host and checkpoints
    want = 2 * needed if copy else needed // (1 if on_host else seed_shards)
    scope = ("in all (the state plus its copy while checkpointing)" if copy
             else "per device" if not on_host else "in all")
    ensure_fits(want, f"the training state of {seeds} seed(s) ({scope})",
                "lower --buffer-capacity, --seeds or --num-envs", fraction=0.9)
    return needed
