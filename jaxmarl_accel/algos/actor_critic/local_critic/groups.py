"""Which agents share parameters (:class:`Groups` of equal-size :class:`Block` sets) and the
learner's static :class:`Skeleton`: initialization with a leading group axis G, and acting
through each agent's group actor. Shapes: N agents, G groups, M agents of one group."""

from __future__ import annotations

from typing import NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.algos.actor_critic.local_critic.critics import (
    ObserveAt,
    critic_width,
    make_critic,
)
from jaxmarl_accel.algos.actor_critic.state import (
    ActorCriticState,
    target_entropy_of,
)
from jaxmarl_accel.algos.actor_critic.variant import Variant
from jaxmarl_accel.algos.distributions import ActionDistribution, make_distribution
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import PyTree


class Block(NamedTuple):
    """Groups of equal size handled in one ``vmap``.

    Attributes:
      first: the block's first group (its groups are ``first .. first + len(agents) - 1``).
      agents: ``[Gb, M]`` static agent indices of each of its groups.
    """

    first: int
    agents: np.ndarray


class Groups(NamedTuple):
    """Which agents share parameters (static).

    Attributes:
      count: G, parameter sets.
      of_agent: ``[N]`` the group of each agent.
      blocks: the groups in blocks of equal size: one block of N single-agent groups
        (``sharing="agent"``) or one block per team (``sharing="team"``).
    """

    count: int
    of_agent: np.ndarray
    blocks: tuple[Block, ...]


def make_groups(spec: EnvSpec, sharing: str) -> Groups:
    """The :class:`Groups` of ``sharing`` (``"agent"`` or ``"team"``) for ``spec``'s agents;
    teams are numbered in the order their first agent appears."""
    n = spec.num_agents
    if sharing == "agent":
        return Groups(n, np.arange(n), (Block(0, np.arange(n)[:, None]),))
    names = list(dict.fromkeys(spec.teams))
    of_agent = np.array([names.index(team) for team in spec.teams])
    blocks = tuple(Block(g, np.flatnonzero(of_agent == g)[None, :]) for g in range(len(names)))
    return Groups(len(names), of_agent, blocks)


class Skeleton(NamedTuple):
    """The static parts of one learner (bound to the functions below)."""

    spec: EnvSpec
    config: ActorCriticConfig
    variant: Variant
    dist: ActionDistribution
    groups: Groups
    actor_mlp: networks.MLP
    critic_mlp: nn.Module  # an MLP or PIC's graph network (make_critic)
    actor_tx: optax.GradientTransformation
    critic_tx: optax.GradientTransformation
    alpha_tx: optax.GradientTransformation
    mask: jax.Array  # [N, A] bool valid actions
    target_entropy: jax.Array  # [G]
    observe_at: ObserveAt | None = None  # batches hold physical states (see the module doc)


def check_spec(spec: EnvSpec, config: ActorCriticConfig) -> None:
    """One-line ``ValueError`` when ``spec`` cannot have the critics ``config`` asks for."""
    if spec.position_columns is None:
        raise ValueError(f"critic {config.critic!r} ranks the agents by position; "
                         f"{spec.name} observations hold no positions (use --critic joint)")
    if not 1 <= config.critic_k <= spec.num_agents - 1:
        raise ValueError(f"critic_k {config.critic_k}: {spec.name} has {spec.num_agents} agents, "
                         f"so a critic can see 1 to {spec.num_agents - 1} other agents")


def make_skeleton(spec: EnvSpec, config: ActorCriticConfig, variant: Variant,
                  observe_at: ObserveAt | None = None) -> Skeleton:
    """All static set-up: groups, networks, distribution, optimizers, masks."""
    check_spec(spec, config)
    if observe_at is not None and spec.physical_position_columns is None:
        raise ValueError(f"observe_at: {spec.name} has no physical state to observe from")
    dist = make_distribution(spec, config, variant.continuous_default)
    groups = make_groups(spec, config.sharing)
    n = spec.num_agents
    first_agent = np.array([np.flatnonzero(groups.of_agent == g)[0] for g in range(groups.count)])
    return Skeleton(
        spec=spec, config=config, variant=variant, dist=dist, groups=groups,
        actor_mlp=networks.MLP(config.hidden_sizes, dist.out_size),
        critic_mlp=make_critic(config),
        actor_tx=losses.make_optimizer(config.actor_lr, config.grad_clip),
        critic_tx=losses.make_optimizer(config.critic_lr, config.grad_clip),
        alpha_tx=optax.adam(config.alpha_lr),
        mask=spec.action_mask if not spec.continuous else jnp.ones((n, dist.action_dim), bool),
        target_entropy=target_entropy_of(spec, config)[first_agent], observe_at=observe_at)


def init(sk: Skeleton, key: jax.Array) -> ActorCriticState:
    """Fresh learner state, every leaf with the group axis G first (targets equal to the
    online networks)."""
    g = sk.groups.count
    actor_key, critic_key = jax.random.split(key)
    width = critic_width(sk.config.critic, sk.spec.obs_dim, sk.dist.action_dim,
                         sk.config.critic_k)
    actor = networks.init_actors(sk.actor_mlp, actor_key, g, sk.spec.obs_dim)
    critic = networks.init_critics(sk.critic_mlp, critic_key, g, sk.variant.num_critics, width)
    log_alpha = jnp.full((g,), jnp.log(jnp.maximum(sk.config.alpha, 1e-30)), jnp.float32)
    return ActorCriticState(
        actor=actor, critic=critic, target_actor=actor, target_critic=critic,
        actor_opt=jax.vmap(lambda p: losses.flat_init(sk.actor_tx, p))(actor),
        critic_opt=jax.vmap(lambda p: losses.flat_init(sk.critic_tx, p))(critic),
        log_alpha=log_alpha, alpha_opt=jax.vmap(sk.alpha_tx.init)(log_alpha),
        step=jnp.zeros((), jnp.int32))


def block_params(params: PyTree, block: Block) -> PyTree:
    """The parameters of ``block``'s groups: every leaf ``[G, ...]`` (axis 0 the groups)
    cut to ``[block's groups, ...]``."""
    return jax.tree.map(lambda x: x[block.first:block.first + block.agents.shape[0]], params)


def apply_all(sk: Skeleton, params: PyTree, obs: jax.Array) -> jax.Array:
    """Every agent's actor output ``[..., N, out]`` at ``obs [..., N, obs_dim]`` (its group's
    actor; ``params`` leaves ``[G, ...]``)."""
    if sk.config.sharing == "agent":
        return networks.apply_actors(sk.actor_mlp, params, obs)
    parts, order = [], []
    for block in sk.groups.blocks:
        team = block.agents[0]
        one = jax.tree.map(lambda x, g=block.first: x[g], params)
        parts.append(sk.actor_mlp.apply(one, jnp.take(obs, team, axis=-2)))
        order.append(team)
    out = jnp.concatenate(parts, axis=-2)
    return jnp.take(out, np.argsort(np.concatenate(order)), axis=-2)


def apply_at(sk: Skeleton, params: PyTree, obs: jax.Array, agents: jax.Array) -> jax.Array:
    """Actor outputs ``[..., out]`` of agents ``agents [...]`` (int) at their observations
    ``obs [..., obs_dim]`` (team sharing: every team's actor, then each agent's own)."""
    outs = jax.vmap(sk.actor_mlp.apply, in_axes=(0, None))(params, obs)  # [G, ..., out]
    group = jnp.asarray(sk.groups.of_agent)[agents]
    return jnp.take_along_axis(outs, group[None, ..., None], axis=0)[0]


def act(sk: Skeleton, state: ActorCriticState, obs: jax.Array, key: jax.Array,
        explore: bool) -> tuple[jax.Array, jax.Array]:
    """Every agent's action at ``obs [..., N, obs_dim]`` (see :attr:`Algo.act`)."""
    chex.assert_axis_dimension(obs, -2, sk.spec.num_agents)
    chex.assert_axis_dimension(obs, -1, sk.spec.obs_dim)
    out = apply_all(sk, state.actor, obs)
    if explore:
        return sk.dist.explore(out, sk.mask, key)
    return sk.dist.exploit(out, sk.mask)
