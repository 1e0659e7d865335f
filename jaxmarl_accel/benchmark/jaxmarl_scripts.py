"""One JaxMARL baseline script run from a checkout: its config, its ``train``, its curve.

Every script of JaxMARL 0.2.0's minimal baseline set has the same shape: a Hydra ``main``
over YAML configs, a ``make_train(config)`` (IPPO, MAPPO) or ``make_train(config, env)`` with
``env_from_config(config)`` (the Q-learning scripts) returning ``train(rng)``, and its metrics
sent to ``wandb.log`` from inside the compiled program (a host callback once per update).
:func:`load_script` imports the script with stand-ins for Hydra, OmegaConf and wandb where
they are not installed, and gives it a ``wandb`` whose ``log`` keeps every metric dict
(:class:`Collector`: with a run length, also each seed's per-round curve and a progress line
every 5% of a seed, the only window into a seed that is one compiled call of hours);
:func:`base_config` merges its YAML files as its Hydra ``main`` would and
:func:`script_config` sets the task, the env steps and the seed set; :func:`load_baseline`
does both from a checkout by the baseline's name. :func:`run_seeds` compiles ``train`` once
and calls it seed by seed (JaxMARL's own seed ``vmap`` deadlocks on a 2-core CPU: its
orthogonal initializers' batched QR), and :func:`curve` reads the logged dicts: the greedy
test's return and win rate where the script tests (``test_returned_*``), else the training
episodes' (``returned_*``), at each update's env steps.

The benchmark's reference pairs (:mod:`~.jaxmarl_reference`) and the side-by-side speed
benches of ``experiments/bench`` (``qmix``, ``qmix_smax``, ``ippo``) load the scripts
through this module.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

STAND_IN_MODULES = ("hydra", "omegaconf", "wandb")
SCRIPTS: dict[tuple[str, str], str] = {
    ("ippo_ff", "mpe"): "IPPO/ippo_ff_mpe.py",
    ("ippo_rnn", "mpe"): "IPPO/ippo_rnn_mpe.py",
    ("mappo_rnn", "mpe"): "MAPPO/mappo_rnn_mpe.py",
    ("qmix_rnn", "mpe"): "QLearning/qmix_rnn.py",
    ("vdn_rnn", "mpe"): "QLearning/vdn_rnn.py",
    ("vdn_ff", "mpe"): "QLearning/vdn_ff.py",
    ("ippo_rnn", "smax"): "IPPO/ippo_rnn_smax.py",
    ("mappo_rnn", "smax"): "MAPPO/mappo_rnn_smax.py",
    ("qmix_rnn", "smax"): "QLearning/qmix_rnn.py",
    ("vdn_rnn", "smax"): "QLearning/vdn_rnn.py",
    ("ippo_ff", "overcooked"): "IPPO/ippo_ff_overcooked.py",
    ("vdn_cnn", "overcooked"): "QLearning/vdn_cnn_overcooked.py",
    ("ippo_ff", "hanabi"): "IPPO/ippo_ff_hanabi.py",
    ("mappo_ff", "hanabi"): "MAPPO/mappo_ff_hanabi.py",
}
"""(JaxMARL baseline, JaxMARL suite) -> its script under ``baselines/``."""
QL_ALG_CONFIGS = {("qmix_rnn", "mpe"): "ql_rnn_mpe", ("vdn_rnn", "mpe"): "ql_rnn_mpe",
                  ("vdn_ff", "mpe"): "vdn_ff_mpe", ("qmix_rnn", "smax"): "ql_rnn_smax",
                  ("vdn_rnn", "smax"): "ql_rnn_smax",
                  ("vdn_cnn", "overcooked"): "ql_cnn_overcooked"}
"""The Q-learning scripts' ``alg`` config of each (baseline, suite), as JaxMARL's runner."""


CURVE_KEYS = ("env_step", "update_steps", "returned_won_episode", "returned_episode_returns",
              "loss")
"""The per-round metrics a :class:`Collector`'s curves keep (each the mean over the round's
envs, steps and agents, as the scripts average them; ``returned_won_episode``: whether each
env's last finished battle was won)."""
_SEED_KEY = re.compile(r"rng(-?\d+)/env_step$")


class Collector:
    """A stand-in for ``wandb``: ``log`` keeps every metric dict (as NumPy values).

    With ``total_steps`` (the env steps of one seed's run) it also keeps each seed's
    per-round curve (:data:`CURVE_KEYS`) and writes a line with ``say`` every ``1 / parts``
    of a seed: env steps, seconds, the time left at the rate since the last line, the
    training win rate (or return, where the env counts no battles) and loss. A script with
    ``WANDB_LOG_ALL_SEEDS`` names each seed's metrics ``rng<key word>/...`` (its seed
    ``vmap``); ``keys``, the ``[S, 2]`` seed keys, name a seed by its index there; otherwise
    the seed is :attr:`seed` (set by :func:`run_seeds`). A script's ``log`` is a host
    callback once a round: the program is the script's own but for that copy of a few
    scalars to the host.
    """

    def __init__(self, total_steps: int = 0, parts: int = 20, name: str = "jaxmarl",
                 keys: Any = None, say: Callable[[str], None] | None = None) -> None:
        self.logged: list[dict[str, np.ndarray]] = []
        self.seed = 0  # the seed running, where the metrics do not name theirs
        self.total_steps, self.name = int(total_steps), name
        self.say = say or (lambda line: print(line, flush=True))
        self.labels = {int(key[0]): index for index, key in enumerate(np.asarray(keys))
                       } if keys is not None else {}
        self.every = max(1, self.total_steps // parts)
        self.rows: dict[int, list[dict[str, float]]] = {}
        self.started: dict[int, tuple[float, float]] = {}  # seed -> (time, env step)
        self.last: dict[int, tuple[float, float]] = {}  # at its last line

    def attach(self, module: types.ModuleType, config: dict[str, Any]) -> dict[str, Any]:
        """A copy of the script's ``config`` with its per-round report on (each seed's
        metrics also under ``rng<seed>/``), this object installed as ``module.wandb``."""
        module.wandb = self
        return {**copy.deepcopy(config), "WANDB_MODE": "online", "WANDB_LOG_ALL_SEEDS": True}

    def log(self, metrics: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        """Keep ``metrics`` (the rest of wandb's arguments are ignored); with a run length,
        add the round to its seed's curve and write the progress line when one is due."""
        self.logged.append({k: np.asarray(v) for k, v in metrics.items()})
        if self.total_steps:
            self._progress(metrics)

    def _progress(self, metrics: dict[str, Any]) -> None:
        seed = next((int(m.group(1)) for key in metrics if (m := _SEED_KEY.match(key))),
                    self.seed)
        row = {key: float(np.mean(metrics[key])) for key in CURVE_KEYS if key in metrics}
        rows = self.rows.setdefault(seed, [])
        now, step = time.perf_counter(), row.get("env_step", 0.0)
        if not rows or step <= rows[-1].get("env_step", 0.0):
            rows.clear()  # the seed's program called again: its curve starts over
            self.started[seed] = self.last[seed] = (now, step)
        rows.append(row)
        if int(step) // self.every > int(self.last[seed][1]) // self.every:
            # time left at the rate since the last line (rounds before learning are faster)
            last_time, last_step = self.last[seed]
            left = (now - last_time) * (self.total_steps - step) / max(step - last_step, 1.0)
            self.last[seed] = (now, step)
            score = (f"training win {row['returned_won_episode']:.3f}"
                     if "returned_won_episode" in row else "training return "
                     f"{row.get('returned_episode_returns', float('nan')):.3f}")
            self.say(f"  {self.name} seed {self.labels.get(seed, seed)}: {step:,.0f} of "
                     f"{self.total_steps:,} env steps, {now - self.started[seed][0]:,.0f} s "
                     f"(about {left:,.0f} s left), {score}, "
                     f"loss {row.get('loss', float('nan')):.4f}")

    def curves(self) -> list[dict[str, Any]]:
        """Each seed's curve, in the order the seeds first reported: ``seed`` (its index in
        ``keys``, else its key's first word), then metric -> value per round."""
        return [{"seed": self.labels.get(seed, seed),
                 **{key: [row[key] for row in rows if key in row] for key in CURVE_KEYS}}
                for seed, rows in self.rows.items()]

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


def load_script(path: Path, collector: Collector | None = None
                ) -> tuple[types.ModuleType, Collector]:
    """The script at ``path`` as a module whose ``wandb`` is ``collector`` (default: a new
    :class:`Collector`)."""
    spec = importlib.util.spec_from_file_location(f"jaxmarl_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    with stand_ins():
        spec.loader.exec_module(module)
    collector = collector if collector is not None else Collector()
    module.wandb = collector
    return module, collector


def _yaml(path: Path) -> dict[str, Any]:
    import yaml  # a dependency of flax

    with open(path) as handle:
        return yaml.safe_load(handle) or {}


def script_path(checkout: str, baseline: str, suite: str) -> Path:
    """The script of JaxMARL's ``baseline`` on ``suite`` in the checkout at ``checkout``
    (:data:`SCRIPTS`); a one-line ``ValueError`` where the checkout lacks it."""
    if (baseline, suite) not in SCRIPTS:
        raise ValueError(f"JaxMARL has no {baseline} baseline on {suite}")
    path = Path(checkout) / "baselines" / SCRIPTS[baseline, suite]
    if not path.is_file():
        raise ValueError(f"{checkout!r} holds no baselines/{SCRIPTS[baseline, suite]}: give "
                         "the root of a JaxMARL checkout")
    return path


def base_config(script: Path, baseline: str, suite: str) -> dict[str, Any]:
    """The script's own config as its Hydra ``main`` builds it: the Q-learning scripts'
    ``config.yaml`` with their ``alg`` (:data:`QL_ALG_CONFIGS`) merged in, the others' the
    YAML their decorator names."""
    alg = QL_ALG_CONFIGS.get((baseline, suite))
    if alg is not None:
        base = _yaml(script.parent / "config" / "config.yaml")
        return copy.deepcopy({**base, **_yaml(script.parent / "config" / "alg" / f"{alg}.yaml")})
    found = re.search(r'config_name="([^"]+)"', script.read_text())
    if found is None:
        raise ValueError(f"{script}: no Hydra config_name")
    return copy.deepcopy(_yaml(script.parent / "config" / f"{found.group(1)}.yaml"))


def load_baseline(checkout: str, baseline: str, suite: str,
                  collector: Collector | None = None) -> tuple[types.ModuleType, dict[str, Any]]:
    """JaxMARL's ``baseline`` script on ``suite`` from the checkout at ``checkout`` as a
    module (its ``wandb`` ``collector``, :func:`load_script`) and its own config
    (:func:`base_config`)."""
    script = script_path(checkout, baseline, suite)
    module, _ = load_script(script, collector)
    return module, base_config(script, baseline, suite)


def script_config(script: Path, baseline: str, suite: str, env: str, env_steps: int,
                  evaluations: int = 10) -> dict[str, Any]:
    """The script's config (:func:`base_config`) with the task's env (MPE: ``ENV_NAME``;
    SMAX: ``MAP_NAME``; Overcooked: the layout), ``TOTAL_TIMESTEPS``, one seed and a greedy
    test (where the script tests) ``evaluations`` times over the run, at least once an
    update; logging goes to the collector."""
    config = base_config(script, baseline, suite)
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


def run_seeds(train: Any, seeds: list[int], collector: Collector
              ) -> Iterator[tuple[int, list[dict[str, np.ndarray]], float]]:
    """``train`` compiled once (before the first seed), called on ``PRNGKey(seed)`` for each
    seed in turn; yields each seed as it finishes: the seed, its logged dicts and its seconds
    (the first seed's include the compile)."""
    import jax

    compiled = None
    for seed in seeds:
        start = time.perf_counter()
        key = jax.random.PRNGKey(seed)
        if compiled is None:
            compiled = jax.jit(train).lower(key).compile()
        collector.logged, collector.seed = [], seed
        jax.block_until_ready(compiled(key))
        jax.effects_barrier()
        yield seed, list(collector.logged), time.perf_counter() - start


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
