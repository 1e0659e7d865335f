"""Actor-critic learners whose critics do not grow with N, optionally shared by a team.

The joint critic of MADDPG (:mod:`~jaxmarl_accel.algos.actor_critic`) reads every agent's
observation and action, ``N (obs_dim + A)`` inputs per agent: at N = 1,000 and k = 8 that is
57,000 inputs and about 58 GB of critics. Here agent i's critic reads its own observation
and action and a neighbourhood of the other agents' actions (and, for PIC, observations):

* ``critic="knearest"``: the actions of its k nearest agents, nearest first,
  ``[o_i, a_i, a_{j_1}, .., a_{j_k}]`` (the neighbourhood the k-nearest observation of the
  MPE scenarios already describes);
* ``critic="meanfield"``: the mean action of those k nearest agents,
  ``[o_i, a_i, mean_j a_j]`` (mean-field actor-critic, Yang et al. 2018, eq. 9, with the
  neighbourhood of k nearest agents);
* ``critic="pic"``: a graph network over the nodes ``{i} ∪ {k nearest agents}`` with node
  features ``[o_j, a_j]``, invariant to the neighbours' order (the permutation-invariant
  critic of PIC, Liu et al. 2019, on agent i's neighbourhood;
  :mod:`~jaxmarl_accel.algos.pic`). Its samples also carry the neighbours' observations at
  ``obs`` and ``next_obs``; the other kinds' samples do not.

The neighbours are found from the joint observation: the scenarios whose spec has
``position_columns`` hold each agent's absolute position in its observation, so the learner
ranks the other agents by the same distances the env ranks them by
(:func:`nearest_agents`), at ``obs`` for the critic and at ``next_obs`` for its target.

Built with ``observe_at`` (the env's ``observe_physical_at`` at its params), the learner
takes batches of packed physical states (``obs`` and ``next_obs`` ``[B, N, F]``, a
physical-state replay) and observes only the rows its samples read: with
``shared_batch="pairs"`` each sampled agent at ``obs``, and it and its k nearest agents at
``next_obs`` (PIC: the neighbours at ``obs`` too), ``[1 + k, N]`` distances per sample
instead of ``[N, N]`` per joint step; with every agent of a row sampled, all rows. Its
updates equal those of the same learner on the observations (tested).

Parameters are stacked on a leading *group* axis G: ``sharing="agent"`` gives every agent its
own actor and critics (G = N, as the joint learners); ``sharing="team"`` gives each team one
actor and one set of critics (G = teams), trained on the pooled samples of its agents
(parameter sharing; the observations are agent-relative, so the agents of a team tell
themselves apart by what they see). A shared learner's batch is either every agent of the B
sampled joint steps (``shared_batch="joint_steps"``, B x M samples for a team of M) or B
(joint step, agent) pairs, one agent of each team drawn per joint step
(``shared_batch="pairs"``).

Everything else is the skeleton of :mod:`~jaxmarl_accel.algos.actor_critic` and the
algorithm's :class:`~jaxmarl_accel.algos.variant.Variant` (MADDPG, MATD3, MASAC): critic
regression to ``y_i = r_i + gamma (1 - d_i) (min_c Q'_c(o'_i, a'_i, a'_N'(i)) + alpha H)``
(paper 001 eq. 2) with next actions from the variant's next actors, the actor ascending
its critic through its own action with the neighbours' actions (and observations) from the
replay (paper 001 eq. 1), soft target updates after both (Alg. 1 line 14), MATD3's delay
and MASAC's temperature. Shapes: B sampled joint steps, N agents, G groups, P samples of
one group, k neighbours, A action width, C critics.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxmarl_accel.algos import losses, networks, pic
from jaxmarl_accel.algos.actor_critic import (
    ActorInfo,
    AlgoState,
    CriticInfo,
    bind_learner,
    finish_update,
    target_entropy_of,
    update_metrics,
)
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.config import AlgoConfig
from jaxmarl_accel.algos.distributions import ActionDistribution, make_distribution
from jaxmarl_accel.algos.variant import Variant
from jaxmarl_accel.buffers.recompute import observe_chunk, observe_rows
from jaxmarl_accel.envs import core
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Transition

PyTree = Any
ObserveAt = Any  # (physical [N, F], agents [M] int) -> observations [M, obs_dim]


def nearest_agents(pos: jax.Array, agents: jax.Array | None, k: int) -> jax.Array:
    """The ``k`` nearest other agents of some agents of one joint step, nearest first.

    Distances are computed as the MPE scenarios compute them for their k-nearest
    observations (:func:`~jaxmarl_accel.envs.core.pairwise_delta`), so the ranking is theirs.

    Args:
      pos: ``[N, 2]`` every agent's position in one joint step.
      agents: ``[M]`` int, the agents whose neighbours are wanted, or ``None`` for all N.
      k: static number of neighbours, ``k <= N - 1``.

    Returns:
      ``[M, k]`` (or ``[N, k]``) int32 agent indices.
    """
    num = pos.shape[0]
    if agents is None:
        _, dist = core.pairwise_delta(pos, pos)
        dist = jnp.where(jnp.eye(num, dtype=bool), jnp.inf, dist)
    else:
        _, dist = core.pairwise_delta(pos[agents], pos)
        dist = jnp.where(agents[:, None] == jnp.arange(num)[None, :], jnp.inf, dist)
    return core.nearest_index(dist, k).astype(jnp.int32)


def positions(spec: EnvSpec, obs: jax.Array) -> jax.Array:
    """Every agent's absolute position ``[..., N, 2]`` from observations ``[..., N, obs_dim]``
    (the columns ``spec.position_columns``)."""
    start, stop = spec.position_columns
    return obs[..., start:stop]


def critic_features(kind: str, obs: jax.Array, action: jax.Array,
                    neighbour_actions: jax.Array,
                    neighbour_obs: jax.Array | None = None) -> jax.Array:
    """Agent i's critic input: ``[..., obs_dim + A + k A]`` (``"knearest"``: its observation,
    its action and its k neighbours' actions, nearest first), ``[..., obs_dim + 2 A]``
    (``"meanfield"``: the neighbours' mean action) or ``[..., (1 + k) (obs_dim + A)]``
    (``"pic"``: the node features ``[o_j, a_j]`` of i and its neighbours, i first), from
    ``obs [..., obs_dim]``, ``action [..., A]``, ``neighbour_actions [..., k, A]`` and, for
    ``"pic"`` only, ``neighbour_obs [..., k, obs_dim]``."""
    if kind == "pic":
        nodes = jnp.concatenate([
            jnp.concatenate([obs[..., None, :], neighbour_obs], axis=-2),
            jnp.concatenate([action[..., None, :], neighbour_actions], axis=-2)], axis=-1)
        return nodes.reshape((*nodes.shape[:-2], -1))
    if kind == "meanfield":
        others = jnp.mean(neighbour_actions, axis=-2)
    else:
        others = neighbour_actions.reshape((*neighbour_actions.shape[:-2], -1))
    return jnp.concatenate([obs, action, others], axis=-1)


def critic_width(kind: str, obs_dim: int, action_dim: int, k: int) -> int:
    """Width of :func:`critic_features`' output: independent of the number of agents."""
    if kind == "pic":
        return (1 + k) * (obs_dim + action_dim)
    return obs_dim + action_dim + (action_dim if kind == "meanfield" else k * action_dim)


def make_critic(config: AlgoConfig) -> nn.Module:
    """One critic of ``config.critic``: ``[..., critic_width] -> [..., 1]``, an MLP of
    ``hidden_sizes`` (knearest, meanfield) or PIC's graph network with one graph-convolution
    layer per width of ``hidden_sizes`` over ``1 + critic_k`` nodes (pic)."""
    if config.critic == "pic":
        return pic.PermutationInvariantCritic(config.hidden_sizes, 1 + config.critic_k)
    return networks.MLP(config.hidden_sizes, 1)


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
    config: AlgoConfig
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


def check_spec(spec: EnvSpec, config: AlgoConfig) -> None:
    """One-line ``ValueError`` when ``spec`` cannot have the critics ``config`` asks for."""
    if spec.position_columns is None:
        raise ValueError(f"critic {config.critic!r} ranks the agents by position; "
                         f"{spec.name} observations hold no positions (use --critic joint)")
    if not 1 <= config.critic_k <= spec.num_agents - 1:
        raise ValueError(f"critic_k {config.critic_k}: {spec.name} has {spec.num_agents} agents, "
                         f"so a critic can see 1 to {spec.num_agents - 1} other agents")


def make_skeleton(spec: EnvSpec, config: AlgoConfig, variant: Variant,
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


def init(sk: Skeleton, key: jax.Array) -> AlgoState:
    """Fresh learner state, every leaf with the group axis G first (targets equal to the
    online networks)."""
    g = sk.groups.count
    actor_key, critic_key = jax.random.split(key)
    width = critic_width(sk.config.critic, sk.spec.obs_dim, sk.dist.action_dim,
                         sk.config.critic_k)
    actor = networks.init_actors(sk.actor_mlp, actor_key, g, sk.spec.obs_dim)
    critic = networks.init_critics(sk.critic_mlp, critic_key, g, sk.variant.num_critics, width)
    log_alpha = jnp.full((g,), jnp.log(max(sk.config.alpha, 1e-30)), jnp.float32)
    return AlgoState(
        actor=actor, critic=critic, target_actor=actor, target_critic=critic,
        actor_opt=jax.vmap(lambda p: losses.flat_init(sk.actor_tx, p))(actor),
        critic_opt=jax.vmap(lambda p: losses.flat_init(sk.critic_tx, p))(critic),
        log_alpha=log_alpha, alpha_opt=jax.vmap(sk.alpha_tx.init)(log_alpha),
        step=jnp.zeros((), jnp.int32))


def _block_params(params: PyTree, block: Block) -> PyTree:
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


def act(sk: Skeleton, state: AlgoState, obs: jax.Array, key: jax.Array,
        explore: bool) -> tuple[jax.Array, jax.Array]:
    """Every agent's action at ``obs [..., N, obs_dim]`` (see :attr:`Algo.act`)."""
    chex.assert_axis_dimension(obs, -2, sk.spec.num_agents)
    chex.assert_axis_dimension(obs, -1, sk.spec.obs_dim)
    out = apply_all(sk, state.actor, obs)
    if explore:
        return sk.dist.explore(out, sk.mask, key)
    return sk.dist.exploit(out, sk.mask)


class Samples(NamedTuple):
    """One block's training samples: P (joint step, agent) pairs for each of its Gb groups,
    every leaf ``[Gb, P, ...]``.

    Attributes:
      rows, agents: int ``[Gb, P]``, the joint step (batch row) and the agent.
      obs, action: the agent's ``[.., obs_dim]`` and ``[.., A]``; reward, done: ``[..]``.
      neighbour_action: its k nearest agents' replayed actions ``[.., k, A]``.
      next_action, next_bonus: its next action ``[.., A]`` and entropy bonus ``[..]``.
      next_obs: ``[.., obs_dim]``; next_neighbour_action: its k nearest agents' next actions
        (at ``next_obs``) ``[.., k, A]``; weight: the row's importance weight ``[..]``.
      neighbour_obs, next_neighbour_obs: the k nearest agents' observations ``[.., k,
        obs_dim]`` at ``obs`` and at ``next_obs`` (``critic="pic"``; ``None`` otherwise).
    """

    rows: jax.Array
    agents: jax.Array
    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    done: jax.Array
    neighbour_action: jax.Array
    next_obs: jax.Array
    next_action: jax.Array
    next_bonus: jax.Array
    next_neighbour_action: jax.Array
    weight: jax.Array
    neighbour_obs: jax.Array | None = None
    next_neighbour_obs: jax.Array | None = None


def _pairs(sk: Skeleton, block: Block, batch_size: int, key: jax.Array
           ) -> tuple[jax.Array, jax.Array]:
    """``rows, agents`` ``[Gb, P]`` of one block: every agent of every row (P = B M), or one
    agent per row drawn uniformly from its group (P = B, ``shared_batch="pairs"``)."""
    gb, m = block.agents.shape
    if sk.config.shared_batch == "pairs" and m > 1:
        pick = jax.random.randint(key, (gb, batch_size), 0, m)
        return (jnp.broadcast_to(jnp.arange(batch_size), (gb, batch_size)),
                jnp.asarray(block.agents)[jnp.arange(gb)[:, None], pick])
    rows = np.repeat(np.arange(batch_size), m)
    agents = np.tile(block.agents, (1, batch_size))
    return jnp.asarray(np.broadcast_to(rows, agents.shape)), jnp.asarray(agents)


def _neighbours(sk: Skeleton, pos: jax.Array, rows: jax.Array, agents: jax.Array,
                every: jax.Array | None) -> jax.Array:
    """The k nearest agents ``[Gb, P, k]`` of each sample, from every agent's position
    ``pos [B, N, 2]`` (``every``: all agents' neighbours ``[B, N, k]`` when already
    computed)."""
    if every is not None:
        return every[rows, agents]
    one = lambda row, agent: nearest_agents(pos[row], agent[None], sk.config.critic_k)[0]
    return jax.vmap(jax.vmap(one))(rows, agents)


def _joint_positions(sk: Skeleton, joint: jax.Array) -> jax.Array:
    """Every agent's position ``[B, N, 2]`` from a batch's ``obs`` or ``next_obs``:
    observations, or packed physical states when the learner observes them itself."""
    if sk.observe_at is None:
        return positions(sk.spec, joint)
    start, stop = sk.spec.physical_position_columns
    return joint[..., start:stop]


def _look(sk: Skeleton, joint: jax.Array, rows: jax.Array, who: jax.Array) -> jax.Array:
    """Observations ``[Gb, P, m, obs_dim]`` of agents ``who [Gb, P, m]`` in joint steps
    ``rows [Gb, P]`` of ``joint`` ``[B, N, ...]``: read from observations, or observed from
    packed physical states (``sk.observe_at``, only those rows)."""
    if sk.observe_at is None:
        return joint[rows[..., None], who]
    flat_rows, flat_who = rows.reshape(-1), who.reshape(-1, who.shape[-1])
    out = jax.vmap(lambda r, w: sk.observe_at(joint[r], w))(flat_rows, flat_who)
    return out.reshape(*who.shape, out.shape[-1])


def _observe_all(sk: Skeleton, batch: Transition) -> Transition:
    """``batch`` with every agent's observations in place of packed physical states
    (:func:`~jaxmarl_accel.buffers.recompute.observe_chunk` joint steps at a time)."""
    n = sk.spec.num_agents
    every = lambda physical: sk.observe_at(physical, jnp.arange(n))
    chunk = observe_chunk(n)
    return batch.replace(obs=observe_rows(every, batch.obs, chunk),
                         next_obs=observe_rows(every, batch.next_obs, chunk))


def samples(sk: Skeleton, state: AlgoState, batch: Transition, weights: jax.Array,
            key: jax.Array) -> list[Samples]:
    """The :class:`Samples` of every block, with next actions from the variant's next actors
    (one key for the whole batch) and, for ``critic="pic"``, the neighbours' observations."""
    bsz, n = batch.reward.shape
    pair_key, next_key = jax.random.split(key)
    pairs = [_pairs(sk, block, bsz, k) for block, k in
             zip(sk.groups.blocks, jax.random.split(pair_key, len(sk.groups.blocks)),
                 strict=True)]
    total = sum(rows.size for rows, _ in pairs)
    every_agent = total >= bsz * n  # cheaper to find all agents' neighbours at once
    if every_agent and sk.observe_at is not None:  # every row is read: observe them all
        return samples(sk._replace(observe_at=None), state, _observe_all(sk, batch), weights,
                       key)
    params, k = sk.variant.next_actors(state), sk.config.critic_k
    with_obs = sk.config.critic == "pic"
    pos_now, pos_next = _joint_positions(sk, batch.obs), _joint_positions(sk, batch.next_obs)
    if every_agent:
        near = jax.vmap(lambda pos: nearest_agents(pos, None, k))
        now, nxt = near(pos_now), near(pos_next)
        next_all, bonus_all = sk.variant.next_action(
            sk.dist, apply_all(sk, params, batch.next_obs), sk.mask, next_key)
    else:
        now = nxt = None
    out = []
    for (rows, agents), block_key in zip(pairs, jax.random.split(next_key, len(pairs)),
                                         strict=True):
        nb = _neighbours(sk, pos_now, rows, agents, now)
        nb_next = _neighbours(sk, pos_next, rows, agents, nxt)
        if every_agent:
            next_action, next_bonus = next_all[rows, agents], bonus_all[rows, agents]
            next_nb_action = next_all[rows[..., None], nb_next]
            next_nb_obs = batch.next_obs[rows[..., None], nb_next] if with_obs else None
            own_next_obs = batch.next_obs[rows, agents]
        else:  # only the samples' agents and their neighbours act
            who = jnp.concatenate([agents[..., None], nb_next], axis=-1)  # [Gb, P, 1 + k]
            obs = _look(sk, batch.next_obs, rows, who)
            acts, bonus = sk.variant.next_action(
                sk.dist, apply_at(sk, params, obs, who), sk.mask[who], block_key)
            next_action, next_bonus = acts[..., 0, :], bonus[..., 0]
            next_nb_action = acts[..., 1:, :]
            next_nb_obs = obs[..., 1:, :] if with_obs else None
            own_next_obs = obs[..., 0, :]
        seen = jnp.concatenate([agents[..., None], nb], axis=-1) if with_obs else agents[..., None]
        now_obs = _look(sk, batch.obs, rows, seen)  # [Gb, P, 1 (+ k), obs_dim]
        out.append(Samples(
            rows=rows, agents=agents, obs=now_obs[..., 0, :],
            action=batch.action[rows, agents], reward=batch.reward[rows, agents],
            done=batch.done[rows, agents], neighbour_action=batch.action[rows[..., None], nb],
            next_obs=own_next_obs, next_action=next_action,
            next_bonus=next_bonus, next_neighbour_action=next_nb_action,
            weight=weights[rows],
            neighbour_obs=now_obs[..., 1:, :] if with_obs else None,
            next_neighbour_obs=next_nb_obs))
    return out


class Group(NamedTuple):
    """One group's slice of :class:`AlgoState` (leaves without the group axis)."""

    actor: PyTree
    critic: PyTree
    target_critic: PyTree
    actor_opt: PyTree
    critic_opt: PyTree
    log_alpha: jax.Array
    alpha_opt: PyTree
    target_entropy: jax.Array


def _groups_of(sk: Skeleton, state: AlgoState, block: Block) -> Group:
    cut = lambda tree: _block_params(tree, block)
    return Group(cut(state.actor), cut(state.critic), cut(state.target_critic),
                 cut(state.actor_opt), cut(state.critic_opt), cut(state.log_alpha),
                 cut(state.alpha_opt), cut(sk.target_entropy))


def _critic_loss(critic: PyTree, sk: Skeleton, s: Samples, y: jax.Array):
    x = critic_features(sk.config.critic, s.obs, s.action, s.neighbour_action, s.neighbour_obs)
    return losses.critic_regression(critic, sk.critic_mlp, x, s.weight, y)


def _actor_loss(actor: PyTree, sk: Skeleton, critics: PyTree, s: Samples, key: jax.Array,
                alpha: jax.Array):
    out = sk.actor_mlp.apply(actor, s.obs)
    mask = sk.mask[s.agents]
    own, bonus = sk.dist.sample(out, mask, key)
    x = critic_features(sk.config.critic, s.obs, own, s.neighbour_action, s.neighbour_obs)
    q = jnp.min(networks.apply_critics(sk.critic_mlp, critics, x), axis=0)
    loss = -jnp.mean(q) - alpha * jnp.mean(bonus) + sk.config.actor_reg * sk.dist.reg(out, mask)
    return loss, jnp.mean(bonus)


def group_target(sk: Skeleton, group: Group, s: Samples) -> jax.Array:
    """One group's critic targets ``y [P]`` (paper 001 eq. 2 with the variant's entropy
    term; ``s`` leaves ``[P, ...]``)."""
    x = critic_features(sk.config.critic, s.next_obs, s.next_action, s.next_neighbour_action,
                        s.next_neighbour_obs)
    return losses.bootstrap_target(sk.critic_mlp, group.target_critic, x, s.reward, s.done,
                                   s.next_bonus, sk.variant.alpha(group.log_alpha),
                                   sk.config.gamma)


def group_critic_step(sk: Skeleton, group: Group, s: Samples, y: jax.Array
                      ) -> tuple[Group, CriticInfo]:
    """One optimizer step of a group's critics on its P samples."""
    (loss, (td, q_mean)), grad = jax.value_and_grad(_critic_loss, has_aux=True)(
        group.critic, sk, s, y)
    critic, opt = losses.flat_step(sk.critic_tx, grad, group.critic_opt, group.critic)
    return group._replace(critic=critic, critic_opt=opt), CriticInfo(loss, td, q_mean)


def group_actor_step(sk: Skeleton, group: Group, s: Samples, key: jax.Array
                     ) -> tuple[Group, ActorInfo]:
    """One optimizer step of a group's actor on its P samples, then its temperature step."""
    (loss, entropy), grad = jax.value_and_grad(_actor_loss, has_aux=True)(
        group.actor, sk, sk.variant.actor_critics(group.critic), s, key,
        sk.variant.alpha(group.log_alpha))
    actor, opt = losses.flat_step(sk.actor_tx, grad, group.actor_opt, group.actor)
    log_alpha, alpha_opt = sk.variant.temperature(
        sk.alpha_tx, group.log_alpha, group.alpha_opt, entropy, group.target_entropy)
    return (group._replace(actor=actor, actor_opt=opt, log_alpha=log_alpha, alpha_opt=alpha_opt),
            ActorInfo(loss, entropy))


def _put(state: AlgoState, block: Block, group: Group) -> AlgoState:
    stop = block.first + block.agents.shape[0]
    put = lambda full, part: jax.tree.map(lambda f, p: f.at[block.first:stop].set(p), full, part)
    return state.replace(
        actor=put(state.actor, group.actor), critic=put(state.critic, group.critic),
        actor_opt=put(state.actor_opt, group.actor_opt),
        critic_opt=put(state.critic_opt, group.critic_opt),
        log_alpha=put(state.log_alpha, group.log_alpha),
        alpha_opt=put(state.alpha_opt, group.alpha_opt))


def _check_batch(sk: Skeleton, batch: Transition, weights: jax.Array | None) -> None:
    if batch.reward.ndim != 2:
        raise ValueError(f"critic {sk.config.critic!r} learns from one batch for all agents "
                         "(leaves [B, N, ...]); per-agent batches need --critic joint")
    bsz, n = batch.reward.shape
    width = sk.spec.obs_dim if sk.observe_at is None else sk.spec.physical_state_dim
    chex.assert_shape([batch.obs, batch.next_obs], (bsz, n, width))
    chex.assert_shape(batch.action, (bsz, n, sk.dist.action_dim))
    if weights is not None:
        chex.assert_shape(weights, (bsz,))


def _priorities(sk: Skeleton, blocks: list[Samples], td: list[jax.Array], bsz: int
                ) -> jax.Array:
    """TD errors ``[B, N]`` for the replay: each sample's at its (row, agent); with pairs,
    every agent of a row gets the mean of the row's samples."""
    n = sk.spec.num_agents
    if sk.config.shared_batch == "pairs":  # every block's samples are rows 0 .. B - 1
        rows = jnp.mean(jnp.stack([jnp.mean(t, axis=0) for t in td]), axis=0)
        return jnp.broadcast_to(rows[:, None], (bsz, n))
    out = jnp.zeros((bsz, n), jnp.float32)
    for s, t in zip(blocks, td, strict=True):
        out = out.at[s.rows, s.agents].set(t)
    return out


def update(sk: Skeleton, state: AlgoState, batch: Transition, weights: jax.Array,
           key: jax.Array) -> tuple[AlgoState, dict[str, jax.Array], jax.Array]:
    """One update of every group (see :attr:`Algo.update`): critic targets and steps, then
    actor steps (every ``policy_delay`` updates), then soft target updates."""
    _check_batch(sk, batch, weights)
    sample_key, actor_key = jax.random.split(key)
    blocks = samples(sk, state, batch, weights.astype(jnp.float32), sample_key)
    delay = sk.variant.policy_delay
    do_actor = (state.step + 1) % delay == 0
    new = state
    c_infos, a_infos = [], []
    for block, s, k in zip(sk.groups.blocks, blocks, jax.random.split(actor_key, len(blocks)),
                           strict=True):
        group = _groups_of(sk, state, block)

        def one(group: Group, s: Samples, key: jax.Array):
            y = group_target(sk, group, s)
            group, c_info = group_critic_step(sk, group, s, y)
            if delay == 1:
                group, a_info = group_actor_step(sk, group, s, key)
            else:
                skip = lambda g: (g, ActorInfo(jnp.zeros(()), jnp.zeros(())))
                group, a_info = jax.lax.cond(
                    do_actor, lambda g: group_actor_step(sk, g, s, key), skip, group)
            return group, (c_info, a_info)

        keys = jax.random.split(k, block.agents.shape[0])
        group, (c_info, a_info) = jax.vmap(one)(group, s, keys)
        new = _put(new, block, group)
        c_infos.append(c_info)
        a_infos.append(a_info)
    new = finish_update(sk, state, new, do_actor)
    cat = lambda xs: jnp.concatenate([jnp.ravel(x) for x in xs])
    c_info = CriticInfo(*(cat(parts) for parts in zip(*c_infos, strict=True)))
    a_info = ActorInfo(*(cat(parts) for parts in zip(*a_infos, strict=True)))
    metrics = update_metrics(sk, new, c_info, a_info, do_actor)
    td = _priorities(sk, blocks, [c.td for c in c_infos], batch.reward.shape[0])
    return new, metrics, td


def build(spec: EnvSpec, config: AlgoConfig, variant: Variant,
          observe_at: ObserveAt | None = None) -> Algo:
    """The learner of ``variant`` with critics of ``config.critic`` and parameters shared as
    ``config.sharing`` says; with ``observe_at`` its ``update`` takes batches of packed
    physical states and observes the rows it reads (see the module docstring). ``phases``
    is ``None``: the phases of a joint learner's update (``experiments.characterize``) are
    not split out here."""
    return bind_learner(make_skeleton(spec, config, variant, observe_at), init, act, update,
                        None)

