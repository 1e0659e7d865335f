"""A learner family defined outside the package: independent double DQN (IDQN).

Every agent picks its action from one Q-network shared by all agents (its input: the
agent's observation and its one-hot id), learns from the replay's joint transitions with
double-DQN targets (van Hasselt et al. 2016, eq. 4: the online network picks the next action,
the target network values it), a Huber loss and a soft target update, and explores
epsilon-greedily with epsilon annealed over its updates. No file of the package changes: the
family is a :class:`jaxmarl_accel.Family` record (its hyperparameter dataclass, the replay
kind it learns from, the run's replay defaults), the learner an :class:`jaxmarl_accel.AlgoSpec`
whose ``build`` returns the :class:`jaxmarl_accel.Algo` protocol (``init``, ``policy``,
``update``).

Three ways to use it::

    python examples/custom_learner.py     # registers it, trains it through make_train
    jaxmarl-accel run --algo examples.custom_learner:SPEC --env examples.custom_env:make \\
        --hidden 32 --out runs/idqn
    jaxmarl-accel run --resume runs/idqn && jaxmarl-accel evaluate runs/idqn

The command line makes one flag per field of :class:`IDQNConfig` (``--lr``, ``--tau``,
``--epsilon-anneal-updates``, ...); ``jaxmarl-accel run --algo examples.custom_learner:SPEC
--help`` lists them. Shapes: ``B`` batch, ``N`` agents, ``D`` observation width, ``A``
actions.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

import jaxmarl_accel as jm
from jaxmarl_accel.envs import EnvSpec


@dataclasses.dataclass(frozen=True)
class IDQNConfig:
    """IDQN's hyperparameters (frozen: a run's config is a static argument).

    Attributes:
      hidden: width of the Q-network's two hidden ReLU layers.
      lr: Adam's learning rate.
      gamma: discount factor.
      tau: soft target update rate (target <- tau * online + (1 - tau) * target).
      epsilon_start, epsilon_finish: exploration rate at the first update and after
        ``epsilon_anneal_updates`` updates (linear in between).
      epsilon_anneal_updates: updates over which epsilon is annealed.
    """

    REPLAY_DEFAULTS: ClassVar[dict[str, Any]] = {
        "buffer_capacity": 50_000, "batch_size": 64, "num_envs": 8,
        "total_env_steps": 100_000, "learning_starts": 1_000}
    """The run's replay and schedule defaults for IDQN (``TrainConfig`` fields left None)."""

    hidden: int = 64
    lr: float = 1e-3
    gamma: float = 0.95
    tau: float = 0.01
    epsilon_start: float = 1.0
    epsilon_finish: float = 0.05
    epsilon_anneal_updates: int = 2_000

    def __post_init__(self) -> None:
        for name in ("gamma", "tau", "epsilon_start", "epsilon_finish"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)}")
        for name in ("hidden", "epsilon_anneal_updates"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")


@struct.dataclass
class IDQNState:
    """The learner's state (one seed).

    Attributes:
      params: the online Q-network's parameters (a list of ``(w, b)`` layers).
      target: the target network's parameters, same structure.
      opt_state: Adam's state.
      step: updates done so far, ``[]`` int32 (drives epsilon).
    """

    params: Any
    target: Any
    opt_state: Any
    step: jax.Array


def init_params(key: jax.Array, sizes: tuple[int, ...]) -> list[tuple[jax.Array, jax.Array]]:
    """An MLP's layers ``[(w [in, out], b [out])]`` with LeCun-normal weights, zero biases."""
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (i, o)) / jnp.sqrt(i), jnp.zeros((o,)))
            for k, i, o in zip(keys, sizes[:-1], sizes[1:], strict=True)]


def q_values(params: Any, obs: jax.Array) -> jax.Array:
    """Q-values ``[..., N, A]`` of observations ``[..., N, D]``, each agent's row with its
    one-hot id appended (one network shared by the agents)."""
    n = obs.shape[-2]
    ids = jnp.broadcast_to(jnp.eye(n, dtype=obs.dtype), (*obs.shape[:-2], n, n))
    x = jnp.concatenate([obs, ids], axis=-1)
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def epsilon(config: IDQNConfig, step: jax.Array) -> jax.Array:
    """Linear annealing from ``epsilon_start`` to ``epsilon_finish`` over the updates."""
    frac = jnp.minimum(step / config.epsilon_anneal_updates, 1.0)
    return config.epsilon_start + frac * (config.epsilon_finish - config.epsilon_start)


def build(spec: EnvSpec, config: IDQNConfig, context: jm.BuildContext) -> jm.Algo:
    """IDQN for env ``spec`` as the :class:`jaxmarl_accel.Algo` protocol."""
    if spec.continuous:
        raise ValueError(f"algo 'idqn' needs discrete actions; {spec.name} was made with "
                         "continuous_actions=True")
    n, a = spec.num_agents, spec.num_actions
    sizes = (spec.obs_dim + n, config.hidden, config.hidden, a)
    tx = optax.adam(config.lr)

    def init(key: jax.Array) -> IDQNState:
        params = init_params(key, sizes)
        return IDQNState(params=params, target=params, opt_state=tx.init(params),
                         step=jnp.zeros((), jnp.int32))

    def policy(explore: bool):
        """``(state, carry, key, obs [N, D], avail [N, A] bool or None) -> (action [N],
        one-hot [N, A], carry)``: greedy, or epsilon-greedy over the available actions."""

        def act(state: IDQNState, carry: Any, key: jax.Array, obs: jax.Array, avail: Any):
            valid = spec.action_mask if avail is None else avail & spec.action_mask
            q = jnp.where(valid, q_values(state.params, obs), -jnp.inf)
            action = jnp.argmax(q, axis=-1).astype(jnp.int32)
            if explore:
                coin_key, random_key = jax.random.split(key)
                uniform = jax.random.categorical(random_key, jnp.where(valid, 0.0, -jnp.inf))
                explore_now = jax.random.uniform(coin_key, (n,)) < epsilon(config, state.step)
                action = jnp.where(explore_now, uniform, action).astype(jnp.int32)
            return action, jax.nn.one_hot(action, a), carry

        return act

    def loss(params: Any, target: Any, batch: jm.Transition, weights: jax.Array):
        taken = jnp.argmax(batch.action, axis=-1)  # [B, N]
        q = jnp.take_along_axis(q_values(params, batch.obs), taken[..., None], -1)[..., 0]
        next_action = jnp.argmax(q_values(params, batch.next_obs), axis=-1)  # online picks
        next_q = jnp.take_along_axis(q_values(target, batch.next_obs),
                                     next_action[..., None], -1)[..., 0]  # target values
        y = batch.reward + config.gamma * (1.0 - batch.done) * jax.lax.stop_gradient(next_q)
        td = q - y  # [B, N]
        return jnp.mean(weights[:, None] * optax.huber_loss(td)), td

    def update(state: IDQNState, batch: jm.Transition, weights: jax.Array, key: jax.Array):
        """One update on ``batch`` (leaves ``[B, N, ...]``, weights ``[B]``); td errors
        ``[B, N]`` for the replay's priorities."""
        (value, td), grads = jax.value_and_grad(loss, has_aux=True)(
            state.params, state.target, batch, weights)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        target = optax.incremental_update(params, state.target, config.tau)
        metrics = {"loss": value, "epsilon": epsilon(config, state.step)}
        return (IDQNState(params=params, target=target, opt_state=opt_state,
                          step=state.step + 1), metrics, td)

    return jm.Algo(init=init, policy=policy, update=update, action_dim=a)


def check_run(run: Any) -> None:
    """IDQN learns from one batch for all agents (``index_sharing`` shared)."""
    if run.index_sharing != "shared":
        raise ValueError(f"index_sharing {run.index_sharing!r}: algo 'idqn' learns from one "
                         "batch for all agents (use shared)")


FAMILY = jm.Family(name="idqn", title="independent DQN", config_type=IDQNConfig,
                   replay=lambda config: "transition",
                   replay_defaults=IDQNConfig.REPLAY_DEFAULTS,
                   help="examples.custom_learner.IDQNConfig")
SPEC = jm.AlgoSpec(name="idqn", family=FAMILY, build=build, check=check_run,
                   summary="independent double DQN, one Q-network shared by the agents")


def main() -> None:
    """Register IDQN, train it on the ring of ``examples/custom_env.py`` through
    ``make_train`` and print the final evaluation against the env's baselines."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=16_000, help="env steps per seed")
    parser.add_argument("--seeds", type=int, default=2, help="seeds trained at once")
    args = parser.parse_args()
    import custom_env  # the environment example beside this file

    jm.register_algo(SPEC, replace=True)
    jm.register_env("ring", custom_env.make, replace=True)
    config = jm.TrainConfig(env="ring", algo="idqn", learner=IDQNConfig(hidden=32),
                            total_env_steps=args.steps, eval_every=args.steps,
                            num_envs=8, update_every=8, batch_size=64, buffer_capacity=5_000,
                            learning_starts=500)
    train = jax.jit(jax.vmap(jm.make_train(config)))
    _, metrics = train(jax.random.split(jax.random.PRNGKey(0), args.seeds))
    returns = np.asarray(metrics.eval_return[:, -1].mean(-1))
    print(f"idqn on the ring: final evaluation return per seed {np.round(returns, 2).tolist()}")


if __name__ == "__main__":
    main()
