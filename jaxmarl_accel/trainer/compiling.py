"""XLA compiler options for the training programs: a faster compile on the CPU.

XLA's CPU backend spends most of a training program's compile time in LLVM, optimizing the
loops it generates for fused elementwise work. The programs here spend their run time in
matrix products (library calls XLA does not generate) and in small fused loops, so LLVM's
most expensive optimizations buy nothing measurable, while they cost a third of the compile.
:func:`compiler_options` therefore asks XLA's CPU backend for optimization level 1 (its
default is 3) with LLVM's expensive passes off.

Measured on a 2-core AMD EPYC (jax 0.10.2), quiet machine:

* bench ``qmix``'s program (MPE spread, 128 rounds, 1 seed): backend compile 20.6 s at the
  defaults, 12.9 s with these options; fastest run 1.51 s on both;
* QMIX on the 8-agent stag hunt, one chunk of 32 rounds (``experiments.run``, 1 seed):
  compile 31.0 and 30.9 s at the defaults, 22.0 and 23.6 s with these options; the second
  chunk 48.6 and 46.5 s at the defaults, 45.9 and 42.7 s with them.

XLA's older fusion emitters (``--xla_cpu_use_fusion_emitters=false``) are not among the options:
they compile bench ``qmix``'s program in the same time (10.4 s against 10.5 s), the 6-agent
MADDPG and MASAC programs of bench ``train`` (spread, 8 seeds) in 3.7-4.3 s instead of
4.9-5.5 s at the same steps/s within the noise, and ran a chunk of 8-agent QMIX on the stag
hunt in 31.0 s against 29.5 s. The test suite, whose time is all compiling, uses them.

Level 0 is not used: it turned one test configuration's state into NaNs. Other platforms
get no options (their backends are not LLVM-bound the same way, and nothing was measured
there). An ``XLA_FLAGS`` that sets either option itself wins: the options are then left out.
"""

from __future__ import annotations

import os
from typing import Any

import jax

CPU_OPTIONS: dict[str, Any] = {"xla_backend_optimization_level": 1,
                               "xla_llvm_disable_expensive_passes": True}
"""The options :func:`compiler_options` gives programs compiled for the CPU."""


def compiler_options(platform: str | None = None) -> dict[str, Any]:
    """XLA compiler options for a training program compiled for ``platform``.

    Args:
      platform: ``"cpu"``, ``"gpu"``, ``"tpu"`` (a device's ``platform``); None for the
        default backend's.

    Returns:
      :data:`CPU_OPTIONS` for the CPU, unless ``XLA_FLAGS`` names one of them (the user's
      flags then apply as they are); an empty dict otherwise. Pass it to
      ``jax.jit(..., compiler_options=...)``.
    """
    platform = platform or jax.default_backend()
    flags = os.environ.get("XLA_FLAGS", "")
    if platform != "cpu" or any(name in flags for name in CPU_OPTIONS):
        return {}
    return dict(CPU_OPTIONS)


__all__ = ["CPU_OPTIONS", "compiler_options"]
