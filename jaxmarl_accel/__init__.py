"""jaxmarl_accel: end-to-end multi-agent RL in one compiled JAX program: off-policy
actor-critic (MADDPG / MATD3 / MASAC) and value-based (QMIX / VDN / IQL, MAC-PO) learners on
replay, on-policy A2C / PPO on rollouts.

The stable public pieces are the names in ``__all__``, importable from the top level; each
is loaded from its module on first use, so ``import jaxmarl_accel`` stays cheap::

    import jax
    import jaxmarl_accel as jm

    env, env_params = jm.make("simple_spread", num_agents=3)          # Env, params pytree
    buffer = jm.make_buffer("uniform", capacity=10_000, batch_size=256)  # Buffer of pure fns
    algo = jm.make_algo("matd3", env.spec, jm.ActorCriticConfig())  # Algo: init/policy/update
    train = jm.make_train(jm.TrainConfig(algo="matd3"))                 # key -> (state, metrics)
    state, metrics = jax.jit(jax.vmap(train))(jax.random.split(jax.random.PRNGKey(0), 8))

Every piece is a pure function or a bundle of them (a NamedTuple from a ``make_*``
factory), so it can be called inside another project's own ``jit`` / ``scan`` / ``vmap``;
``examples/custom_loop.py`` assembles a training loop from them.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC: dict[str, tuple[str, ...]] = {
    # envs
    "jaxmarl_accel.envs": ("make", "register_env", "register_scenario", "Scenario", "Env",
                           "EnvSpec"),
    "jaxmarl_accel.envs.evaluate": ("evaluate_policy", "EvalResult"),
    # replay buffers and samplers
    "jaxmarl_accel.buffers": ("make_buffer", "register_sampler", "SamplerSpec", "SamplerKit",
                              "assemble", "Buffer", "BufferState", "SampleBatch"),
    # learners
    "jaxmarl_accel.algos": ("make_algo", "register_algo", "Algo", "AlgoSpec", "BuildContext",
                            "Family", "ActorCriticConfig", "ActorCriticState", "ValueConfig",
                            "OnPolicyConfig"),
    # training
    "jaxmarl_accel.config": ("TrainConfig",),
    "jaxmarl_accel.trainer.train": ("make_train", "make_trainer", "Trainer", "TrainState",
                                    "ChunkMetrics", "Plan"),
    "jaxmarl_accel.trainer.rounds": ("register_round", "RoundSpec", "Round", "Schedule"),
    "jaxmarl_accel.trainer.compiling": ("compiler_options",),
    # data path
    "jaxmarl_accel.types": ("Transition", "Episode", "Rollout"),
    "jaxmarl_accel.trainer.steps": ("transition_step", "collect_episodes", "learn_step"),
    "jaxmarl_accel.trainer.policy": ("learner_policy",),
    # devices
    "jaxmarl_accel.trainer.sharding": ("plan_layout", "DeviceLayout", "make_sharded_trainer",
                                       "ShardedTrainer"),
}
"""The public names by the module that defines them, grouped by area: the one list of the
public API."""

_EXPORTS: dict[str, str] = {name: module for module, names in _PUBLIC.items()
                            for name in names}
"""Public name -> its module."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first access (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jaxmarl_accel' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
