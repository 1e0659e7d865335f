"""The pure functions of a wrapped JaxMARL env (:func:`~.jaxmarl_env.wrap`): its params and
state pytrees, and reset, step, the random and scripted policies, the available actions and
the global state over JaxMARL's env object, as the :mod:`~.jaxmarl_env` docstring describes.

Each function takes a static :class:`Wrapped` (what :func:`~.jaxmarl_env.wrap` read from
JaxMARL's env) as its first argument; ``wrap`` binds it with ``functools.partial``. ``N`` is
the number of agents, in JaxMARL's agent order.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.envs.jaxmarl_families import Family


@struct.dataclass
class JaxMARLParams:
    """Params of a wrapped JaxMARL env (its own settings are static, fixed at make time).

    Attributes:
      episode_length: int32 []: an episode is truncated when its step count reaches it (at
        most JaxMARL's own limit, ``spec.episode_length``).
    """

    episode_length: jax.Array


@struct.dataclass
class JaxMARLState:
    """State of a wrapped JaxMARL env.

    Attributes:
      inner: JaxMARL's own state pytree.
      t: int32 [], steps taken in the current episode.
    """

    inner: Any
    t: jax.Array


@dataclasses.dataclass(frozen=True)
class Actions:
    """The agents' action spaces in our terms (from ``jaxmarl_env``'s space check).

    Attributes:
      continuous: all 1-D ``Box`` (else all ``Discrete``).
      sizes: discrete action counts or continuous widths, one per agent (N).
      dtypes: JaxMARL's action dtype of each agent.
      low: ``[N, act_dim]`` float32 each Box's low bound (continuous; else empty).
      span: ``[N, act_dim]`` float32 each Box's ``high - low`` (continuous; else empty).
    """

    continuous: bool
    sizes: tuple[int, ...]
    dtypes: tuple[Any, ...]
    low: np.ndarray
    span: np.ndarray


@dataclasses.dataclass(frozen=True, eq=False)
class Wrapped:
    """What the wrapped env's functions read besides their arguments (static; hashed by
    identity, as ``inner`` is).

    Attributes:
      inner: JaxMARL's env object.
      agents: its agent names, in order (N).
      family: its :class:`~.jaxmarl_families.Family`.
      acts: its action spaces.
      avail_fn: JaxMARL's available-action function, or ``None``.
      spec: the wrapped env's spec.
      width_mask: ``[N, act_dim]`` float32, 1 on each agent's continuous action columns.
    """

    inner: Any
    agents: tuple[str, ...]
    family: Family
    acts: Actions
    avail_fn: Any
    spec: EnvSpec
    width_mask: np.ndarray


def observe(w: Wrapped, obs: dict) -> jax.Array:
    """JaxMARL's observations ``{agent: obs}`` as ``[N, obs_dim]`` float32, zero padded."""
    rows = [jnp.ravel(obs[a]).astype(jnp.float32) for a in w.agents]
    return jnp.stack([jnp.pad(r, (0, w.spec.obs_dim - r.shape[0])) for r in rows])


def avail_of(w: Wrapped, inner_state: Any) -> jax.Array:
    """The available actions of JaxMARL's state, ``[N, num_actions]`` bool, padded False."""
    masks = w.avail_fn(inner_state)
    rows = [jnp.asarray(masks[a]).astype(bool) for a in w.agents]
    return jnp.stack([jnp.pad(r, (0, w.spec.num_actions - r.shape[0])) for r in rows])


def to_jaxmarl(w: Wrapped, actions: jax.Array) -> dict:
    """Our actions (``[N]`` int or ``[N, act_dim]`` in ``[0, 1]``) as JaxMARL's
    ``{agent: action}`` (continuous ones mapped onto each agent's Box)."""
    acts = w.acts
    if acts.continuous:
        scaled = acts.low + actions * acts.span  # [N, act_dim]
        return {a: scaled[i, :acts.sizes[i]].astype(acts.dtypes[i])
                for i, a in enumerate(w.agents)}
    return {a: actions[i].astype(acts.dtypes[i]) for i, a in enumerate(w.agents)}


def reset(w: Wrapped, key: jax.Array, params: JaxMARLParams
           ) -> tuple[jax.Array, JaxMARLState]:
    """``Env.reset``: ``(obs [N, obs_dim], state)`` of JaxMARL's reset."""
    obs, inner_state = w.inner.reset(key)
    return observe(w, obs), JaxMARLState(inner=inner_state, t=jnp.zeros((), jnp.int32))


def step(w: Wrapped, key: jax.Array, state: JaxMARLState, actions: jax.Array,
          params: JaxMARLParams):
    """``Env.step``: ``(obs [N, obs_dim], state, reward [N], terminated [], truncated [],
    info)``, JaxMARL's ``step_env`` with our ends and auto-reset (module docstring)."""
    spec, family, limit = w.spec, w.family, w.family.time_limit
    if tuple(actions.shape) != spec.action_shape:
        raise ValueError(f"{spec.name}: actions must have shape {spec.action_shape}, got "
                         f"{tuple(actions.shape)}")
    key_step, key_reset = jax.random.split(key)
    obs, next_inner, reward, dones, _ = w.inner.step_env(key_step, state.inner,
                                                          to_jaxmarl(w, actions))
    t = state.t + 1
    ended = jnp.asarray(dones["__all__"], bool)
    if family.terminal is not None:
        terminated = ended & family.terminal(next_inner)
    elif limit is not None:
        terminated = ended & (t < limit)
    else:
        terminated = ended
    truncated = ~terminated & (ended | (t >= params.episode_length))
    done = terminated | truncated
    reset_obs, reset_inner = w.inner.reset(key_reset)
    new_inner = jax.tree.map(lambda r, s: jnp.where(done, r, s), reset_inner, next_inner)
    final_obs = observe(w, obs)
    info = {"final_obs": final_obs}
    if w.avail_fn is not None:
        info["avail_actions"] = avail_of(w, new_inner)
        info["final_avail_actions"] = avail_of(w, next_inner)
    if family.state_dim > 0:
        info["final_state"] = global_state(w, obs["world_state"])
        info["state"] = jnp.where(done, global_state(w, reset_obs["world_state"]),
                                  info["final_state"])
    for stat, counter in family.stats:
        info[stat] = counter(next_inner, done)
    rewards = jnp.stack([jnp.asarray(reward[a], jnp.float32) for a in w.agents])
    new_state = JaxMARLState(inner=new_inner, t=jnp.where(done, 0, t).astype(jnp.int32))
    return (jnp.where(done, observe(w, reset_obs), final_obs), new_state, rewards, terminated,
            truncated, info)


def random_action(w: Wrapped, key: jax.Array) -> jax.Array:
    """Uniform actions: ``[N, act_dim]`` in ``[0, 1)`` (zero past each agent's width) or
    ``[N]`` int32 below each agent's action count."""
    if w.acts.continuous:
        return jax.random.uniform(key, w.spec.action_shape) * w.width_mask
    return jax.random.randint(key, (w.spec.num_agents,), 0, jnp.asarray(w.acts.sizes),
                              jnp.int32)


def avail_actions(w: Wrapped, state: JaxMARLState, params: JaxMARLParams) -> jax.Array:
    """``Env.avail_actions``: ``[N, num_actions]`` bool."""
    return avail_of(w, state.inner)


def scripted_action(w: Wrapped, key: jax.Array, state: JaxMARLState, params: JaxMARLParams
                     ) -> jax.Array:
    """``Env.scripted_action``: the family's scripted policy where it can act, else uniform
    over the available actions (or :func:`_random_action`)."""
    if w.family.scripted is not None and not w.acts.continuous:
        avail = (avail_of(w, state.inner) if w.avail_fn is not None
                 else jnp.ones((len(w.agents), max(w.acts.sizes)), bool))
        return w.family.scripted(key, state.inner, avail)
    if w.avail_fn is None or w.acts.continuous:
        return random_action(w, key)
    logits = jnp.where(avail_of(w, state.inner), 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def state_of(w: Wrapped, state: JaxMARLState, params: JaxMARLParams) -> jax.Array:
    """``Env.state_of``: JaxMARL's world state flattened, ``[state_dim]`` float32."""
    return global_state(w, w.inner.get_world_state(state.inner))


def global_state(w: Wrapped, world_state: jax.Array) -> jax.Array:
    """Our global state ``[state_dim]`` float32 of JaxMARL's ``world_state``: flattened and
    mapped by the family's ``state_map`` where it has one."""
    state = jnp.ravel(world_state).astype(jnp.float32)
    return state if w.family.state_map is None else w.family.state_map(state)
