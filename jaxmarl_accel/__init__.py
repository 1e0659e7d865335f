"""jaxmarl_accel: end-to-end off-policy multi-agent RL in one compiled JAX program.

The stable public pieces, importable from the top level (each is loaded on first use, so
``import jaxmarl_accel`` stays cheap)::

    import jax
    import jaxmarl_accel as jm

    env, env_params = jm.make("simple_spread", num_agents=3)          # Env, params pytree
    buffer = jm.make_buffer("uniform", capacity=10_000, batch_size=256)  # Buffer of pure fns
    algo = jm.make_algo("matd3", env.spec, jm.ActorCriticConfig())  # Algo: init/act/update
    train = jm.make_train(jm.TrainConfig(algo="matd3"))                 # key -> (state, metrics)
    state, metrics = jax.jit(jax.vmap(train))(jax.random.split(jax.random.PRNGKey(0), 8))

Every piece is a pure function or a bundle of them (a NamedTuple from a ``make_*``
factory), so it can be called inside another project's own ``jit`` / ``scan`` / ``vmap``;
``examples/custom_loop.py`` assembles a training loop from them.

==========================  ==========================================================
envs                        :func:`make`, :class:`Env`, :class:`EnvSpec`,
                            :func:`evaluate_policy`, :class:`EvalResult`
replay buffers and samplers :func:`make_buffer`, :class:`Buffer`, :class:`SampleBatch`,
                            :class:`BufferState`
learners                    :func:`make_algo`, :class:`Algo`, :class:`ActorCriticConfig`,
                            :class:`ActorCriticState`
training                    :func:`make_train`, :func:`make_trainer`, :class:`Trainer`,
                            :class:`TrainConfig`, :class:`TrainState`,
                            :class:`ChunkMetrics`, :class:`Transition`,
                            :func:`compiler_options`
data path                   :func:`transition_step`, :func:`learn_step`,
                            :func:`learner_policy`
devices                     :func:`plan_layout`, :class:`DeviceLayout`,
                            :func:`make_sharded_trainer`, :class:`ShardedTrainer`
==========================  ==========================================================
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "make": "jaxmarl_accel.envs",
    "Env": "jaxmarl_accel.envs",
    "EnvSpec": "jaxmarl_accel.envs",
    "evaluate_policy": "jaxmarl_accel.envs.evaluate",
    "EvalResult": "jaxmarl_accel.envs.evaluate",
    "make_buffer": "jaxmarl_accel.buffers",
    "Buffer": "jaxmarl_accel.buffers",
    "BufferState": "jaxmarl_accel.buffers",
    "SampleBatch": "jaxmarl_accel.buffers",
    "register_env": "jaxmarl_accel.envs",
    "make_algo": "jaxmarl_accel.algos",
    "Algo": "jaxmarl_accel.algos",
    "AlgoSpec": "jaxmarl_accel.algos",
    "BuildContext": "jaxmarl_accel.algos",
    "Family": "jaxmarl_accel.algos",
    "register_algo": "jaxmarl_accel.algos",
    "ActorCriticConfig": "jaxmarl_accel.algos",
    "ActorCriticState": "jaxmarl_accel.algos",
    "ValueConfig": "jaxmarl_accel.algos",
    "OnPolicyConfig": "jaxmarl_accel.algos",
    "Episode": "jaxmarl_accel.types",
    "collect_episodes": "jaxmarl_accel.trainer.steps",
    "make_train": "jaxmarl_accel.trainer.train",
    "compiler_options": "jaxmarl_accel.trainer.compiling",
    "make_trainer": "jaxmarl_accel.trainer.train",
    "Trainer": "jaxmarl_accel.trainer.train",
    "TrainState": "jaxmarl_accel.trainer.train",
    "ChunkMetrics": "jaxmarl_accel.trainer.train",
    "TrainConfig": "jaxmarl_accel.config",
    "Transition": "jaxmarl_accel.types",
    "transition_step": "jaxmarl_accel.trainer.steps",
    "learn_step": "jaxmarl_accel.trainer.steps",
    "learner_policy": "jaxmarl_accel.envs.policies",
    "plan_layout": "jaxmarl_accel.trainer.sharding",
    "DeviceLayout": "jaxmarl_accel.trainer.sharding",
    "make_sharded_trainer": "jaxmarl_accel.trainer.sharding",
    "ShardedTrainer": "jaxmarl_accel.trainer.sharding",
}

__all__ = [
    "Algo",
    "AlgoSpec",
    "BuildContext",
    "Family",
    "register_algo",
    "register_env",
    "ActorCriticConfig",
    "ActorCriticState",
    "Buffer",
    "BufferState",
    "ChunkMetrics",
    "Env",
    "EnvSpec",
    "EvalResult",
    "DeviceLayout",
    "OnPolicyConfig",
    "SampleBatch",
    "ShardedTrainer",
    "TrainConfig",
    "TrainState",
    "Trainer",
    "Transition",
    "ValueConfig",
    "Episode",
    "collect_episodes",
    "compiler_options",
    "evaluate_policy",
    "learn_step",
    "learner_policy",
    "make",
    "make_algo",
    "make_buffer",
    "make_sharded_trainer",
    "make_train",
    "make_trainer",
    "plan_layout",
    "transition_step",
]

if TYPE_CHECKING:
    from jaxmarl_accel.algos import (
        ActorCriticConfig,
        ActorCriticState,
        Algo,
        AlgoSpec,
        BuildContext,
        Family,
        OnPolicyConfig,
        ValueConfig,
        make_algo,
        register_algo,
    )
    from jaxmarl_accel.buffers import Buffer, BufferState, SampleBatch, make_buffer
    from jaxmarl_accel.config import TrainConfig
    from jaxmarl_accel.envs import Env, EnvSpec, make, register_env
    from jaxmarl_accel.envs.evaluate import EvalResult, evaluate_policy
    from jaxmarl_accel.envs.policies import learner_policy
    from jaxmarl_accel.trainer.compiling import compiler_options
    from jaxmarl_accel.trainer.sharding import (
        DeviceLayout,
        ShardedTrainer,
        make_sharded_trainer,
        plan_layout,
    )
    from jaxmarl_accel.trainer.steps import collect_episodes, learn_step, transition_step
    from jaxmarl_accel.trainer.train import (
        ChunkMetrics,
        Trainer,
        TrainState,
        make_train,
        make_trainer,
    )
    from jaxmarl_accel.types import Episode, Transition


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first access (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jaxmarl_accel' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
