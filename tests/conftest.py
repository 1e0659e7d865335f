"""Test-wide settings: a persistent XLA compilation cache shared by the test processes, so
that a program compiled by one test (or worker) is not compiled again by the next."""

from __future__ import annotations

import os
import tempfile

import jax

jax.config.update("jax_compilation_cache_dir",
                  os.environ.get("JAXMARL_TEST_CACHE",
                                 os.path.join(tempfile.gettempdir(), "jaxmarl_accel_xla_cache")))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
