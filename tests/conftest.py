"""Test-wide settings: a persistent XLA compilation cache shared by the test processes, so
that a program compiled by one test (or worker) is not compiled again by the next. The
command-line runs that tests start as subprocesses inherit it through the environment (a
resumed or evaluated run then loads the chunk program its first run compiled)."""

from __future__ import annotations

import os
import tempfile

import jax

CACHE_DIR = os.environ.get("JAXMARL_TEST_CACHE",
                           os.path.join(tempfile.gettempdir(), "jaxmarl_accel_xla_cache"))
jax.config.update("jax_compilation_cache_dir", CACHE_DIR)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", CACHE_DIR)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
