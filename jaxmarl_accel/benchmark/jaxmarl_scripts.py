"""One JaxMARL baseline script run from a checkout: its config, its ``train``, its curve.

Every script of JaxMARL 0.2.0's minimal baseline set has the same shape: a Hydra ``main``
over YAML configs, a ``make_train(config)`` (IPPO, MAPPO) or ``make_train(config, env)`` with
``env_from_config(config)`` (the Q-learning scripts) returning ``train(rng)``, and its metrics
sent to ``wandb.log`` from inside the compiled program (a host callback once per update).
:func:`load_script` imports the script with stand-ins for Hydra, OmegaConf and wandb where
they are not installed, and gives it a ``wandb`` whose ``log`` keeps every metric dict;
:func:`script_config` merges its YAML files as its Hydra ``main`` would, with the task, the
env steps and the seed set; :func:`run_seeds` compiles ``train`` once and calls it seed by
seed (JaxMARL's own seed ``vmap`` deadlocks on a 2-core CPU: its orthogonal initializers'
batched QR), and :func:`curve` reads the logged dicts: the greedy test's return and win rate
where the script tests (``test_returned_*``), else the training episodes' (``returned_*``),
at each update's env steps.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

STAND_IN_MODULES = ("hydra", "omegaconf", "wandb")
QL_ALG_CONFIGS = {("qmix_rnn", "mpe"): "ql_rnn_mpe", ("vdn_rnn", "mpe"): "ql_rnn_mpe",
                  ("vdn_ff", "mpe"): "vdn_ff_mpe", ("qmix_rnn", "smax"): "ql_rnn_smax",
                  ("vdn_rnn", "smax"): "ql_rnn_smax",
                  ("vdn_cnn", "overcooked"): "ql_cnn_overcooked"}
"""The Q-learning scripts' ``alg`` config of each (baseline, suite), as JaxMARL's runner."""


class Collector:
    """A stand-in for ``wandb``: ``log`` keeps every metric dict (as NumPy values)."""

    def __init__(self) -> None:
        self.logged: list[dict[str, np.ndarray]] = []

    def log(self, metrics: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        """Keep ``metrics`` (the rest of wandb's arguments are ignored)."""
        self.logged.append({k: np.asarray(v) for k, v in metrics.items()})

    def init(self, *args: Any, **kwargs: Any) -> None:
        """Nothing: no wandb run."""

    def finish(self, *args: Any, **kwargs: Any) -> None:
        """Nothing: no wandb run."""


@contextmanager
def stand_ins() -> Iterator[None]:
    """Empty ``hydra``, ``omegaconf`` and ``wandb`` modules in ``sys.modules`` (only those not
    installed) while a script is imported; removed afterwards."""
    added = []
    for name in STAND_IN_MODULES:
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            continue
        module = types.ModuleType(name)
        if name == "hydra":
            module.main = lambda **_: (lambda fn: fn)
        if name == "omegaconf":
            module.OmegaConf = type("OmegaConf", (), {})
            module.DictConfig = dict
        sys.modules[name] = module
        added.append(name)
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)


def load_script(path: Path) -> tuple[types.ModuleType, Collector]:
    """The script at ``path`` as a module whose ``wandb`` is a :class:`Collector`."""
    spec = importlib.util.spec_from_file_location(f"jaxmarl_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    with stand_ins():
        spec.loader.exec_module(module)
    collector = Collector()
    module.wandb = collector
    return module, collector


def _yaml(path: Path) -> dict[str, Any]:
    import yaml  # a dependency of flax

    with open(path) as handle:
        return yaml.safe_load(handle) or {}


def script_config(script: Path, baseline: str, suite: str, env: str, env_steps: int,
                  evaluations: int = 10) -> dict[str, Any]:
    """The script's config as its Hydra ``main`` builds it (the Q-learning scripts: their
    ``config.yaml`` with ``alg`` merged in; the others: the YAML their decorator names),
    with the task's env (MPE: ``ENV_NAME``; SMAX: ``MAP_NAME``; Overcooked: the layout),
    ``TOTAL_TIMESTEPS``, one seed and a greedy test (where the script tests) ``evaluations``
    times over the run, at least once an update; logging goes to the collector."""
    alg = QL_ALG_CONFIGS.get((baseline, suite))
    if alg is not None:
        base = _yaml(script.parent / "config" / "config.yaml")
        config = {**base, **_yaml(script.parent / "config" / "alg" / f"{alg}.yaml")}
    else:
        found = re.search(r'config_name="([^"]+)"', script.read_text())
        if found is None:
            raise ValueError(f"{script}: no Hydra config_name")
        config = _yaml(script.parent / "config" / f"{found.group(1)}.yaml")
    config = copy.deepcopy(config)
    if suite == "mpe":
        config["ENV_NAME"] = env
    elif suite == "smax":
        config["MAP_NAME"] = env
    elif suite == "overcooked":
        config.setdefault("ENV_KWARGS", {})["layout"] = env.removeprefix("overcooked_")
    updates = max(1, int(env_steps) // (int(config.get("NUM_ENVS", 1))
                                        * int(config.get("NUM_STEPS", 1))))
    config.update(TOTAL_TIMESTEPS=int(env_steps), NUM_SEEDS=1, WANDB_MODE="online",
                  TEST_INTERVAL=max(1.0 / evaluations, 1.0 / updates))
    return config


def make_script_train(module: types.ModuleType, config: dict[str, Any]) -> tuple[Any, int]:
    """The script's ``train(rng)`` and its env's agent count."""
    import jaxmarl

    if hasattr(module, "env_from_config"):
        env, _ = module.env_from_config(copy.deepcopy(config))
        return module.make_train(copy.deepcopy(config), env), len(env.agents)
    if "ENV_NAME" in config and "overcooked" not in config["ENV_NAME"]:
        agents = len(jaxmarl.make(config["ENV_NAME"], **config.get("ENV_KWARGS", {})).agents)
    else:
        agents = 2
    return module.make_train(copy.deepcopy(config)), agents


def run_seeds(train: Any, seeds: list[int], collector: Collector) -> list[tuple[list, float]]:
    """``train`` compiled once, called on ``PRNGKey(seed)`` for each seed in turn; per seed
    its logged dicts and its seconds (the first seed's include the compile)."""
    import jax

    compiled = None
    out = []
    for seed in seeds:
        start = time.perf_counter()
        key = jax.random.PRNGKey(seed)
        if compiled is None:
            compiled = jax.jit(train).lower(key).compile()
        collector.logged = []
        jax.block_until_ready(compiled(key))
        jax.effects_barrier()
        out.append((list(collector.logged), time.perf_counter() - start))
    return out


def _pick(logged: list[dict[str, np.ndarray]], names: tuple[str, ...]) -> str | None:
    return next((n for n in names if logged and n in logged[-1]), None)


def curve(logged: list[dict[str, np.ndarray]], steps_per_update: int, agents: int,
          per_agent: bool, points: int) -> tuple[list[float], list[float], list[float] | None]:
    """``points`` evaluations read from one seed's logged dicts: env steps, return (divided
    by ``agents`` where the script's MPE wrapper sums the agents' rewards: ``per_agent``) and
    win rate (``None`` where the env counts no battles)."""
    if not logged:
        raise ValueError("the script logged no metrics")
    returns = _pick(logged, ("test_returned_episode_returns", "returned_episode_returns"))
    wins = _pick(logged, ("test_returned_won_episode", "returned_won_episode"))
    if returns is None:
        raise ValueError("the script logged no returned_episode_returns")
    at = np.unique(np.linspace(0, len(logged) - 1, points).round().astype(int))
    steps = [float(logged[i]["env_step"]) if "env_step" in logged[i]
             else float((i + 1) * steps_per_update) for i in at]
    scale = agents if per_agent else 1
    values = [float(np.nanmean(logged[i][returns])) / scale for i in at]
    won = None if wins is None else [float(np.nanmean(logged[i][wins])) for i in at]
    return steps, values, won
