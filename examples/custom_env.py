"""An environment written from scratch in this file, trained without a file of it inside
the package.

*Rendezvous on a ring*: ``N`` agents walk on a ring of ``W`` cells and are rewarded, as one
team, for standing on a goal cell that moves at every reset. Each agent sees its own cell
and the goal's (one-hot, ``2 W`` numbers) and moves left, stays or moves right. It is small
enough to learn in seconds on a CPU and has a scripted policy (walk the shorter way to the
goal), so the normalized score means something.

The contract (:class:`jaxmarl_accel.envs.Env`, :class:`jaxmarl_accel.envs.EnvSpec`): a
factory ``make(**kwargs) -> (Env, params)`` whose ``Env`` has

* ``spec``: the static :class:`~jaxmarl_accel.envs.EnvSpec` (``name``, ``num_agents``,
  ``obs_dim``, ``obs_sizes``, ``teams``, ``continuous``, ``num_actions``, ``action_sizes``,
  ``act_dim``, ``episode_length``; optional ``shared_reward``, ``terminates``,
  ``state_dim``, ``episode_stats``, ``scripted``, ...);
* ``reset(key, params) -> (obs [N, obs_dim], state)``;
* ``step(key, state, actions [N], params) -> (obs, state, reward [N], terminated [],
  truncated [], info)``, resetting by itself when an episode ends, with
  ``info["final_obs"]`` the observation before that reset (and ``info[name]`` for each of
  ``spec.episode_stats``);
* ``scripted_action(key, state, params) -> actions [N]`` (the top of the normalized score;
  set ``spec.scripted=False`` when there is none) and ``random_action(key) -> actions [N]``
  (its bottom);
* optional: ``avail_actions``, ``state_of`` (a global state for QMIX's mixer), physical
  states, ``render``.

Three ways to use it::

    python examples/custom_env.py            # trains MATD3 and QMIX through make_train
    jaxmarl-accel run --env examples.custom_env:make --algo qmix --out runs/ring
    jaxmarl-accel evaluate runs/ring          # resume and evaluate find it the same way

(the ``module:attr`` form is found from the folder the command runs in, as ``python -m``
finds modules). In your own program, ``jaxmarl_accel.register_env("ring", make)`` makes it
``make("ring")`` too.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxmarl_accel as jm
from jaxmarl_accel.envs import Env, EnvSpec

MOVES = jnp.asarray([-1, 0, 1], jnp.int32)  # action 0 left, 1 stay, 2 right


class RingParams(NamedTuple):
    """Numbers that may change without a recompile (a pytree)."""

    episode_length: jax.Array  # [] int32, steps before an episode is truncated


class RingState(NamedTuple):
    """One ring's state."""

    position: jax.Array  # [N] int32, each agent's cell
    goal: jax.Array  # [] int32, the goal's cell
    t: jax.Array  # [] int32, steps taken in this episode


def make(num_agents: int = 3, width: int = 8, episode_length: int = 16
         ) -> tuple[Env, RingParams]:
    """The rendezvous ring with ``num_agents`` agents on ``width`` cells."""
    if num_agents < 1 or width < 2 or episode_length < 1:
        raise ValueError("ring: num_agents >= 1, width >= 2 and episode_length >= 1 needed, "
                         f"got {num_agents}, {width}, {episode_length}")
    n, w = num_agents, width
    spec = EnvSpec(name="ring", num_agents=n, obs_dim=2 * w, obs_sizes=(2 * w,) * n,
                   teams=("agent",) * n, continuous=False, num_actions=3,
                   action_sizes=(3,) * n, act_dim=1, episode_length=episode_length,
                   shared_reward=True)

    def observe(state: RingState) -> jax.Array:
        own = jax.nn.one_hot(state.position, w)  # [N, W]
        goal = jnp.broadcast_to(jax.nn.one_hot(state.goal, w), (n, w))  # [N, W]
        return jnp.concatenate([own, goal], axis=-1)  # [N, 2W]

    def fresh(key: jax.Array) -> RingState:
        pos_key, goal_key = jax.random.split(key)
        return RingState(jax.random.randint(pos_key, (n,), 0, w),
                         jax.random.randint(goal_key, (), 0, w), jnp.zeros((), jnp.int32))

    def reset(key: jax.Array, params: RingParams) -> tuple[jax.Array, RingState]:
        state = fresh(key)
        return observe(state), state

    def step(key: jax.Array, state: RingState, actions: jax.Array, params: RingParams):
        position = (state.position + MOVES[actions]) % w
        reached = RingState(position, state.goal, state.t + 1)
        on_goal = jnp.mean((position == state.goal).astype(jnp.float32))
        reward = jnp.full((n,), on_goal, jnp.float32)  # one team reward for every agent
        truncated = reached.t >= params.episode_length
        final_obs = observe(reached)
        next_state = jax.tree.map(lambda a, b: jnp.where(truncated, a, b), fresh(key), reached)
        return (observe(next_state), next_state, reward, jnp.zeros((), bool), truncated,
                {"final_obs": final_obs})

    def scripted_action(key: jax.Array, state: RingState, params: RingParams) -> jax.Array:
        ahead = (state.goal - state.position) % w  # steps to the goal walking right
        return jnp.where(ahead == 0, 1, jnp.where(ahead <= w // 2, 2, 0)).astype(jnp.int32)

    def random_action(key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (n,), 0, 3)

    env = Env(spec=spec, reset=reset, step=step, scripted_action=scripted_action,
              random_action=random_action)
    return env, RingParams(jnp.asarray(episode_length, jnp.int32))


def train(algo: str, total_env_steps: int, seeds: int) -> np.ndarray:
    """Train ``algo`` on the ring through ``make_train``; the final evaluation's mean return
    per seed ``[seeds]``."""
    jm.register_env("ring", make, replace=True)
    small = {"matd3": jm.ActorCriticConfig(hidden_sizes=(32, 32)),
             "qmix": jm.ValueConfig(hidden=32, epsilon_anneal_steps=total_env_steps // 2)}
    config = jm.TrainConfig(env="ring", algo=algo, learner=small.get(algo),
                            total_env_steps=total_env_steps, eval_every=total_env_steps,
                            num_envs=8, batch_size=32, buffer_capacity=2_000,
                            update_every=8, learning_starts=256 if algo == "matd3" else None)
    train_fn = jax.jit(jax.vmap(jm.make_train(config)))
    _, metrics = train_fn(jax.random.split(jax.random.PRNGKey(0), seeds))
    return np.asarray(metrics.eval_return[:, -1].mean(-1))


def main() -> None:
    """Train an actor-critic and a value learner on the ring and print their returns."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8_000, help="env steps per seed")
    parser.add_argument("--seeds", type=int, default=2, help="seeds trained at once")
    args = parser.parse_args()
    env, params = make()
    for algo in ("matd3", "qmix"):
        returns = train(algo, args.steps, args.seeds)
        print(f"{algo}: final evaluation return per seed {np.round(returns, 2).tolist()} "
              f"(an episode of {env.spec.episode_length} steps; 1 a step on the goal)")


if __name__ == "__main__":
    main()
