"""Another JAX project's own training loop, assembled from jaxmarl_accel's pieces.

Nothing here uses our trainer: the loop, its carry and its schedule are "yours". Our
environment steps ``E`` envs (``jm.transition_step``, the trainer's own env step), our
prioritized replay buffer stores their transitions and samples mini-batches, our MATD3
learner updates all agents, and our buffer takes the TD errors back as priorities
(``jm.learn_step``, the trainer's own update), all inside one ``jax.lax.scan`` under one
``jax.jit``::

    python examples/custom_loop.py --steps 2000 --num-envs 8

Shapes: E envs, N agents, B batch, T loop steps.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

import jaxmarl_accel as jm


class LoopCarry(NamedTuple):
    """What our loop threads through its scan (named, never a positional tuple)."""

    algo: Any  # jm.ActorCriticState, per-agent parameters stacked on a leading [N] axis
    buffer: Any  # jm.BufferState
    env_state: Any  # env states, leading [E] axis
    obs: jax.Array  # [E, N, obs_dim]
    key: jax.Array


class LoopOutput(NamedTuple):
    """Per-step scan output."""

    reward: jax.Array  # [] mean reward over envs and agents this step
    updated: jax.Array  # [] bool, whether an update ran this step
    critic_loss: jax.Array  # [] (0 when no update ran)


def make_loop(num_envs: int = 8, capacity: int = 10_000, batch_size: int = 128,
              hidden: int = 32, algo_name: str = "matd3"):
    """``(init(key) -> LoopCarry, loop(carry, T) -> (LoopCarry, LoopOutput [T]))``.

    ``loop`` is jitted with ``T`` static and the carry donated; each of its ``T`` steps
    moves ``num_envs`` envs one step, adds the ``[E, N, ...]`` transitions to the buffer
    and, once it holds a batch, runs one update of all agents.
    """
    env, env_params = jm.make("simple_spread", num_agents=3)
    buffer = jm.make_buffer("per", capacity=capacity, batch_size=batch_size)
    algo = jm.make_algo(algo_name, env.spec, jm.ActorCriticConfig(hidden_sizes=(hidden, hidden)))
    spec = env.spec
    env_reset = jax.vmap(env.reset, in_axes=(0, None))
    policy = jm.learner_policy(env, algo, scripted_prey=False, explore=True)  # one env's

    def init(key: jax.Array) -> LoopCarry:
        algo_key, reset_key, loop_key = jax.random.split(key, 3)
        obs, env_state = env_reset(jax.random.split(reset_key, num_envs), env_params)
        example = jm.Transition(
            obs=obs[0], action=jnp.zeros((spec.num_agents, algo.action_dim)),
            reward=jnp.zeros(spec.num_agents), next_obs=obs[0], done=jnp.zeros(spec.num_agents))
        return LoopCarry(algo=algo.init(algo_key), buffer=buffer.init(example),
                         env_state=env_state, obs=obs, key=loop_key)

    def update(carry: LoopCarry, key: jax.Array) -> tuple[Any, Any, jax.Array]:
        sample_key, update_key = jax.random.split(key)
        # our sample -> update -> priorities step (what our trainer runs)
        learned = jm.learn_step(algo, buffer, carry.algo, carry.buffer, sample_key, update_key)
        return learned.algo, learned.buffer, learned.metrics["critic_loss"]

    def no_update(carry: LoopCarry, key: jax.Array) -> tuple[Any, Any, jax.Array]:
        return carry.algo, carry.buffer, jnp.zeros((), jnp.float32)

    def step(carry: LoopCarry, _: None) -> tuple[LoopCarry, LoopOutput]:
        key, act_key, env_key, update_key = jax.random.split(carry.key, 4)
        # our env step -> transitions [E, N, ...] (what our trainer runs)
        out = jm.transition_step(env, env_params, policy, carry.algo, carry.env_state,
                                 carry.obs, act_key, env_key)
        carry = carry._replace(buffer=buffer.add(carry.buffer, out.transition),
                               env_state=out.env_state, obs=out.obs, key=key)
        ready = buffer.can_sample(carry.buffer)
        algo_state, buffer_state, loss = jax.lax.cond(ready, update, no_update, carry, update_key)
        carry = carry._replace(algo=algo_state, buffer=buffer_state)
        return carry, LoopOutput(reward=jnp.mean(out.transition.reward), updated=ready,
                                 critic_loss=loss)

    def loop(carry: LoopCarry, num_steps: int) -> tuple[LoopCarry, LoopOutput]:
        return jax.lax.scan(step, carry, None, length=num_steps)

    return jax.jit(init), jax.jit(loop, static_argnums=1, donate_argnums=0)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="loop steps T (default: 2000)")
    parser.add_argument("--num-envs", type=int, default=8, help="envs E (default: 8)")
    parser.add_argument("--batch-size", type=int, default=128, help="batch B (default: 128)")
    parser.add_argument("--hidden", type=int, default=32, help="MLP width (default: 32)")
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed (default: 0)")
    args = parser.parse_args(argv)
    init, loop = make_loop(num_envs=args.num_envs, batch_size=args.batch_size,
                           hidden=args.hidden)
    carry = init(jax.random.PRNGKey(args.seed))
    t0 = time.perf_counter()
    carry, out = loop(carry, args.steps)
    jax.block_until_ready(out)
    seconds = time.perf_counter() - t0
    quarter = max(args.steps // 4, 1)
    result = {"first_quarter_reward": float(jnp.mean(out.reward[:quarter])),
              "last_quarter_reward": float(jnp.mean(out.reward[-quarter:])),
              "updates": int(jnp.sum(out.updated)), "buffer_size": int(carry.buffer.size),
              "seconds_with_compile": seconds}
    print(result)
    return result


if __name__ == "__main__":
    main()
