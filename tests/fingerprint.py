"""A fingerprint of the training program: per-leaf hashes of the ``TrainState`` after two
chunks from a fixed key, for every actor-critic algorithm x sampler x layout x learners mode
(and a few extra settings, A2C, PPO, MAPPO, recurrent PPO, PQN and PQN-VDN among them),
plus the ``metrics.csv`` of a short CLI run.

``tests/test_fingerprint.py`` checks the current code against ``tests/data/fingerprint.json``
(by default 15 of the product's configurations that hold every pair of its factors' values,
:func:`pairwise`, and the others; all of them with ``JAXMARL_FINGERPRINT=all``).
Regenerate it (only when a change of numbers is intended, and say why in the commit) with::

    JAX_PLATFORMS=cpu python -m tests.fingerprint --write

or only the configurations whose numbers changed (the rest of the record, its header and
the CLI run's ``metrics.csv`` included, is kept as it is)::

    JAX_PLATFORMS=cpu python -m tests.fingerprint --write --only NAME [NAME ...]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import jax
import numpy as np

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.config import TrainConfig

PATH = os.path.join(os.path.dirname(__file__), "data", "fingerprint.json")
FINGERPRINT_XLA_LEVEL = 1
"""XLA's CPU backend optimization level of every fingerprinted program (its own training
programs and the command-line run) whatever ``XLA_FLAGS`` says, so that a record written by
``python -m tests.fingerprint`` and the test suite compile the same code. Level 1, as the
test suite compiles (``tests/conftest.py``), not XLA's default 3: the 25 programs the suite
fingerprints compile in about 60% of the time."""
FUSION_EMITTERS = "xla_cpu_use_fusion_emitters"
"""XLA's CPU fusion emitters, which the test suite turns off to compile faster
(``tests/conftest.py``) and the fingerprint keeps on, as they were when it was recorded: the
older emitters change the last bits of every configuration's state."""
ALGOS = ("maddpg", "matd3", "masac")
SAMPLERS = ("uniform", "neighbor", "per", "prioritized_locality", "reuse")
LAYOUTS = ("transition_major", "agent_major")
LEARNERS = ("parallel", "sequential")
CLI_ARGS = ["--algo", "matd3", "--seeds", "2", "--total-env-steps", "400", "--eval-every", "200",
            "--buffer-capacity", "500", "--batch-size", "32", "--num-envs", "4",
            "--update-every", "20", "--learning-starts", "40", "--eval-episodes", "2",
            "--hidden-sizes", "16", "16", "--baseline-episodes", "4", "--devices", "1",
            "--quiet"]


def config(algo: str, sampler: str, layout: str, learners: str, **over: Any) -> TrainConfig:
    """A small run: 3-agent spread, 4 envs, one update per 20 env steps, 2 chunks of 2 rounds."""
    fields = dict(
        env="simple_spread", env_kwargs=(("num_agents", 3),), algo=algo,
        learner=ActorCriticConfig(hidden_sizes=(16, 16), learners=learners), sampler=sampler,
        layout=layout, buffer_capacity=256, batch_size=32, num_envs=4, total_env_steps=80,
        update_every=20, learning_starts=32, eval_every=40, eval_episodes=2)
    fields.update(over)
    return TrainConfig(**fields)


def configs() -> dict[str, TrainConfig]:
    """Every fingerprinted configuration by name."""
    out = {product_name(a, s, lay, lrn): config(a, s, lay, lrn)
           for a, s, lay, lrn in itertools.product(ALGOS, SAMPLERS, LAYOUTS, LEARNERS)}
    for algo in ALGOS:
        out[f"{algo}-continuous"] = config(
            algo, "uniform", "transition_major", "parallel",
            env_kwargs=(("continuous_actions", True), ("num_agents", 3)))
        out[f"{algo}-per_agent-per"] = config(algo, "per", "transition_major", "parallel",
                                              index_sharing="per_agent")
    out["maddpg-tag-prey-scripted"] = config(
        "maddpg", "uniform", "transition_major", "parallel", env="simple_tag",
        env_kwargs=(("num_predators", 3),), prey="scripted")
    out["maddpg-gumbel-continuous"] = config(
        "maddpg", "uniform", "transition_major", "parallel",
        env_kwargs=(("continuous_actions", True), ("num_agents", 3)),
        learner=ActorCriticConfig(hidden_sizes=(16, 16), continuous_policy="gumbel_softmax"))
    from jaxmarl_accel.algos.on_policy import OnPolicyConfig

    small = dict(hidden_sizes=(16, 16), rollout_length=10)
    out["a2c-tag_continuous"] = TrainConfig(
        env="tag_continuous", algo="a2c", num_envs=4, total_env_steps=80, eval_every=40,
        eval_episodes=2, env_kwargs=(("episode_length", 20), ("num_other_agents_observed", 2),
                                     ("num_runners", 3), ("num_taggers", 2)),
        learner=OnPolicyConfig(**small, team_lr=(("runner", 5e-3),)))
    out["ppo-tag-normalized-value"] = TrainConfig(
        env="simple_tag", algo="ppo", num_envs=4, total_env_steps=80, eval_every=40,
        eval_episodes=2, env_kwargs=(("num_obstacles", 0), ("num_predators", 2)),
        learner=OnPolicyConfig(**small, normalize_value=True, minibatches=2))
    spread = dict(env="simple_spread", num_envs=4, total_env_steps=80, eval_every=40,
                  eval_episodes=2, env_kwargs=(("num_agents", 3),))
    out["mappo-spread"] = TrainConfig(algo="mappo", **spread,
                                      learner=OnPolicyConfig(**small, minibatches=2))
    out["ppo-rnn-spread"] = TrainConfig(algo="ppo", **spread, learner=OnPolicyConfig(
        **small, agent="rnn", minibatches=2))
    from jaxmarl_accel.algos.pqn import PQNConfig

    tiny_pqn = dict(hidden_sizes=(16, 16), rollout_length=10, minibatches=4,
                    epsilon_anneal_steps=40)
    out["pqn_vdn-spread"] = TrainConfig(algo="pqn_vdn", **spread,
                                        learner=PQNConfig(**tiny_pqn))
    out["pqn-stag_hunt-batch_norm"] = TrainConfig(
        env="stag_hunt", algo="pqn", num_envs=4, total_env_steps=80, eval_every=40,
        eval_episodes=2, env_kwargs=(("episode_length", 6), ("grid_size", 4),
                                     ("num_agents", 2), ("num_stags", 1)),
        learner=PQNConfig(**tiny_pqn, norm="batch_norm", norm_input=True))
    out["pqn_vdn-rnn-stag_hunt"] = TrainConfig(
        env="stag_hunt", algo="pqn_vdn", num_envs=4, total_env_steps=80, eval_every=40,
        eval_episodes=2, env_kwargs=(("episode_length", 6), ("grid_size", 4),
                                     ("num_agents", 2), ("num_stags", 1)),
        learner=PQNConfig(**{**tiny_pqn, "minibatches": 2}, agent="rnn"))
    return out


def product_name(algo: str, sampler: str, layout: str, learners: str) -> str:
    """The name of one configuration of the algorithm x sampler x layout x learners product."""
    return f"{algo}-{sampler}-{layout}-{learners}"


def pairwise() -> tuple[tuple[str, str, str, str], ...]:
    """15 of the product's 60 configurations, ``(algo, sampler, layout, learners)``, that
    hold every pair of values of any two of its four factors (each algorithm with each
    sampler, each layout with each learners mode, ...): sampler ``s`` and algorithm ``a``
    (indices) take layout ``(s + a // 2) % 2`` and learners mode ``((s + a) // 2) % 2``."""
    return tuple((a, s, LAYOUTS[(si + ai // 2) % 2], LEARNERS[(si + ai) // 2 % 2])
                 for si, s in enumerate(SAMPLERS) for ai, a in enumerate(ALGOS))


def checked_names() -> tuple[str, ...]:
    """The configurations the test suite checks: :func:`pairwise` and every one outside the
    product; all of them with ``JAXMARL_FINGERPRINT=all`` in the environment (as a change of
    the training program should be checked before it is committed)."""
    names = sorted(configs())
    if os.environ.get("JAXMARL_FINGERPRINT") == "all":
        return tuple(names)
    product = {product_name(*c) for c in itertools.product(ALGOS, SAMPLERS, LAYOUTS, LEARNERS)}
    kept = {product_name(*row) for row in pairwise()}
    return tuple(n for n in names if n not in product or n in kept)


def leaf_hashes(tree: Any) -> list[str]:
    """Sorted ``shape/dtype/sha256`` of every leaf (order- and name-independent)."""
    out = []
    for leaf in jax.tree.leaves(tree):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        arr = np.ascontiguousarray(np.asarray(leaf))
        out.append(f"{arr.shape}/{arr.dtype}/{hashlib.sha256(arr.tobytes()).hexdigest()[:16]}")
    return sorted(out)


def leaf_sums(tree: Any) -> list[float]:
    """Sorted float64 sums of |leaf| (the comparison used across JAX versions)."""
    out = []
    for leaf in jax.tree.leaves(tree):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            continue
        out.append(float(np.sum(np.abs(np.asarray(leaf, np.float64)))))
    return sorted(out)


def compile_options() -> dict[str, Any]:
    """XLA options of the fingerprinted programs, whatever ``XLA_FLAGS`` says: optimization
    level :data:`FINGERPRINT_XLA_LEVEL`, and the fusion emitters on where ``XLA_FLAGS`` names
    them (where it does not, they are on already, and a jaxlib without them is not asked)."""
    options: dict[str, Any] = {"xla_backend_optimization_level": FINGERPRINT_XLA_LEVEL}
    if FUSION_EMITTERS in os.environ.get("XLA_FLAGS", ""):
        options[FUSION_EMITTERS] = True
    return options


def fingerprint(cfg: TrainConfig) -> dict[str, Any]:
    """Hashes and sums of the state and chunk metrics after two chunks from ``PRNGKey(0)``."""
    from jaxmarl_accel.trainer.train import make_trainer

    trainer = make_trainer(cfg)
    key = jax.random.PRNGKey(0)
    program = jax.jit(trainer.train).trace(key).lower().compile(
        compiler_options=compile_options())
    state, metrics = program(key)
    return {"state": leaf_hashes(state), "metrics": leaf_hashes(metrics),
            "state_sums": leaf_sums(state)}


def cli_metrics() -> str:
    """The ``metrics.csv`` text of a short CLI run (2 seeds, 2 chunks)."""
    with tempfile.TemporaryDirectory() as out:
        flags = [f for f in os.environ.get("XLA_FLAGS", "").split()
                 if not f.startswith(("--xla_backend_optimization_level",
                                      f"--{FUSION_EMITTERS}"))]
        flags.append(f"--xla_backend_optimization_level={FINGERPRINT_XLA_LEVEL}")
        subprocess.run([sys.executable, "-m", "experiments.run", *CLI_ARGS, "--out", out],
                       check=True, capture_output=True,
                       env={**os.environ, "XLA_FLAGS": " ".join(flags)},
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with open(os.path.join(out, "metrics.csv")) as handle:
            return handle.read()


def cpu_signature() -> str:
    """The host CPU's model and instruction-set flags (``/proc/cpuinfo``), hashed: XLA's CPU
    code generation targets the host's features, so bit-exact results hold only on a CPU
    with the same ones ("unknown" where ``/proc/cpuinfo`` is missing)."""
    try:
        with open("/proc/cpuinfo") as handle:
            lines = handle.read().split("\n\n")[0].splitlines()
    except OSError:
        return "unknown"
    keep = [line for line in lines if line.split(":")[0].strip() in ("model name", "flags")]
    return hashlib.sha256("\n".join(keep).encode()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write {PATH}")
    parser.add_argument("--only", nargs="+", choices=sorted(configs()), metavar="NAME",
                        help="recompute only these configurations; keep the rest of the record")
    args = parser.parse_args()
    if args.only:
        with open(PATH) as handle:
            record = json.load(handle)
        record["configs"].update({name: fingerprint(configs()[name]) for name in args.only})
    else:
        record = {"jax": jax.__version__, "platform": jax.default_backend(),
                  "cpu": cpu_signature(),
                  "configs": {name: fingerprint(cfg) for name, cfg in configs().items()},
                  "cli_metrics_csv": cli_metrics()}
    text = json.dumps(record, indent=1, sort_keys=True)
    if args.write:
        with open(PATH, "w") as handle:
            handle.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
