"""Test-wide settings, inherited through the environment by the command-line runs that tests
start as subprocesses:

* an XLA compilation cache of the run's own (:data:`CACHE_ENV`): a folder that the first
  process (pytest's controller under ``-n``) makes empty and removes at the end, shared by
  its workers and by the command-line runs that tests start, so that within the run a
  program compiled by one test (or worker) is not compiled again by the next, and no run
  depends on, or trips over, what an earlier run left behind. ``JAXMARL_TEST_CACHE`` names
  a folder to use instead, which is then kept (``.ci/run`` shares one between its tiers);
* XLA's CPU backend at optimization level 1 with LLVM's expensive passes off
  (:data:`TEST_XLA_FLAGS`) instead of its default level 3. The suite is bound by compiling
  its many small programs. Level 1 makes the backend's stage of it faster (a fingerprint
  configuration's training program: 11.3 s against 18.6 s on 2 cores; the whole suite about
  10% less time); turning the expensive passes off as well takes the backend's stage of bench
  ``qmix``'s program from 16.5 s to 12.9 s (20.6 s at the default), with the same run time.
  Results may differ from the default level's in the last bits. The fingerprint
  (:mod:`tests.fingerprint`), which checks bits, compiles its programs at level 1 whatever
  ``XLA_FLAGS`` says (its records are the same with the expensive passes on or off). Level 0
  is not used: it turned one fingerprint configuration's state into NaNs;
* where this jaxlib knows it, one flag of the suite's own, :data:`TEST_ONLY_XLA_FLAGS`
  (XLA's older fusion emitters: the suite's compiles take about 0.7 of the time). They
  change the last bits of results, so the fingerprint turns the fusion emitters back on for
  its own programs (:func:`tests.fingerprint.compile_options`). An ``XLA_FLAGS`` that already
  sets a level is left as it is;
* no baseline cache (``JAXMARL_ACCEL_BASELINE_CACHE=off``,
  :mod:`jaxmarl_accel.runs.baseline_cache`): every run measures its baselines, and nothing
  is read from or written to the user's cache folder; the cache's own tests point it at a
  temporary folder;
* the two tiers: ``pytest`` runs the tests not marked ``slow`` by default (``addopts`` in
  ``pyproject.toml``), and ``pytest.mark.fast_cases(n)`` keeps only the first ``n`` cases of
  a parametrized test out of the slow tier (:func:`pytest_collection_modifyitems`);
* under ``-n N`` (``--dist loadgroup``, the project's default), a module marked
  ``pytestmark = pytest.mark.xdist_group(...)`` runs on one worker
  (:mod:`tests.xdist_groups`), so its module fixtures are computed once;
* one finished tiny run for the session (:func:`tiny_run`), read by the modules of the
  xdist group ``run`` (the run and evaluation commands' tests, the checkpoints'), which
  therefore train it once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import jax
import pytest

from jaxmarl_accel.runs.baseline_cache import CACHE_ENV as BASELINE_CACHE_ENV
from jaxmarl_accel.trainer.compiling import CPU_OPTIONS
from tests.fingerprint import FUSION_EMITTERS
from tests.xdist_groups import pytest_xdist_make_scheduler  # noqa: F401  (a pytest hook)

TEST_XLA_FLAGS = " ".join(f"--{name}={str(value).lower()}" for name, value in CPU_OPTIONS.items())
"""Added to ``XLA_FLAGS`` before any backend starts (see the module docstring): the options
the library compiles its CPU programs with (:data:`jaxmarl_accel.trainer.compiling.CPU_OPTIONS`)
as flags, ``--xla_backend_optimization_level=1 --xla_llvm_disable_expensive_passes=true``."""

TEST_ONLY_XLA_FLAGS = (f"--{FUSION_EMITTERS}=false",)
"""Flags the suite adds where this jaxlib knows them (:func:`_known_to_xla`), though the
library does not: XLA's CPU backend then generates its fused elementwise loops with its older
LLVM emitters instead of its MLIR fusion emitters. Measured on a 2-core AMD EPYC (jax 0.10.2),
empty caches, ``-n 2``: four of the costliest modules (``test_replay_obs``, ``test_pic``,
``algos/value/test_learner``, ``test_train``) in 175 s instead of 244 s; a fingerprint
configuration's program compiled in 3.4 s instead of 5.6 s. Why the library leaves them out,
with its figures: :mod:`jaxmarl_accel.trainer.compiling`."""


def _known_to_xla(flag: str) -> bool:
    """Whether a CPU backend starts with ``flag`` in ``XLA_FLAGS`` (XLA aborts the process at
    an unknown flag, and a later jaxlib may drop this one), tried in a child process."""
    probe = "import jax; jax.numpy.zeros(1).block_until_ready()"
    env = {**os.environ, "XLA_FLAGS": flag, "JAX_PLATFORMS": "cpu"}
    try:
        return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                              timeout=120).returncode == 0
    except subprocess.TimeoutExpired:
        return False


# The first process (pytest's controller under -n) adds the flags; its workers and the
# command-line runs that tests start inherit them, and then find the level already set.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    flags = [TEST_XLA_FLAGS, *(f for f in TEST_ONLY_XLA_FLAGS if _known_to_xla(f))]
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *flags]).strip()

CACHE_ENV = "JAXMARL_TEST_CACHE"
"""Names the run's compilation cache folder. The first process sets it when it is unset, so
that its workers and every command-line run that a test starts inherit the folder."""

_made_cache: list[str] = []
"""The cache folder this process made, if it made one (it removes it at the end)."""


def pytest_configure(config) -> None:
    """Points JAX's compilation cache, in this process and in the processes it starts, at the
    run's folder (see the module docstring), making an empty one if none is named yet, and
    turns the baseline cache off. Under ``-n``, the controller runs this before it starts
    its workers."""
    os.environ[BASELINE_CACHE_ENV] = "off"
    if not os.environ.get(CACHE_ENV):
        os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="jaxmarl_accel_xla_cache-")
        _made_cache.append(os.environ[CACHE_ENV])
    folder = os.environ[CACHE_ENV]
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = folder
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")


def pytest_unconfigure(config) -> None:
    """Removes the run's cache folder in the process that made it (the controller under
    ``-n``, after its workers have ended)."""
    for folder in _made_cache:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Marks ``slow`` every case but the first ``n`` of a test marked
    ``pytest.mark.fast_cases(n)`` (cases in collection order), before ``-m`` selects: the
    fast tier keeps one cheap instance of a parametrized check and the slow tier runs the
    rest, each compiling its own program."""
    seen: dict[tuple[str, str], int] = {}
    for item in items:
        mark = item.get_closest_marker("fast_cases")
        if mark is None:
            continue
        key = (str(item.path), item.nodeid.split("[", 1)[0])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > mark.args[0]:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> tuple[str, list[str]]:
    """A finished tiny MATD3 run, ``tests.cli.test_run``'s ``TINY`` with ``--render``: its
    folder (never written to by the tests: they copy it) and the titles its learning curve
    was drawn with. The modules that read it mark themselves ``xdist_group("run")``."""
    from tests.cli.test_run import TINY

    out = str(tmp_path_factory.mktemp("tiny_run") / "out")
    return out, run_keeping_titles([*TINY, "--out", out, "--render"])


def run_keeping_titles(argv):
    """``run`` on ``argv`` (it must succeed); the titles its learning curves were drawn
    with."""
    from jaxmarl_accel.cli import run
    from jaxmarl_accel.runs import figures

    titles = []
    plot = figures.plot_curve
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "plot_curve", lambda out_dir, rows, title, *a: (
            titles.append(title), plot(out_dir, rows, title, *a))[1])
        assert run.main(argv) == 0
    return titles
