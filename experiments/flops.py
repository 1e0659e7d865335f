"""Analytic matmul FLOP count of one update (for the roofline ratio of the benchmarks).

Counts ``2 * m * k * n`` per matrix product; elementwise work (activations, Adam, noise) is
left out, so the figure is what a dense-matmul rate should be compared with. Per sample of
the batch, with ``F(net) = 2 * sum_k d_k d_{k+1}`` the forward cost of an MLP and
``F_1(net) = 2 * d_0 d_1`` its first layer:

* next actions: N actor forwards (one shared batch) or N * N (per-agent batches);
* critic regression, per agent and critic: target forward ``F`` + forward ``F`` +
  backward ``2 F - F_1`` (weight gradients, and input gradients except at the input);
* actor step, per agent (MATD3: on 1 of ``policy_delay`` updates): actor forward ``F_a``,
  actor backward ``2 F_a - F_1a``, and for each critic it ascends (1, or 2 for MASAC's min)
  with ``actor_step="full"``: forward ``F_c`` and backward to the action input ``F_c``;
  with ``"linear"``: the shared first layer ``F_1c``, the rest of the forward and its
  backward ``2 (F_c - F_1c)``, and the own action's correction forward and backward
  ``4 A H_1`` (:func:`~.losses.joint_q_linear`).
"""

from __future__ import annotations

import numpy as np

from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig, actor_step_form
from jaxmarl_accel.algos.distributions import make_distribution
from jaxmarl_accel.algos.registry import variant_of
from jaxmarl_accel.envs.base import EnvSpec


def _mlp_flops(sizes: list[int]) -> tuple[int, int]:
    """``(forward, first layer)`` FLOPs per sample of an MLP with layer widths ``sizes``."""
    forward = sum(2 * a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    return forward, 2 * sizes[0] * sizes[1]


def update_matmul_flops(
    name: str, spec: EnvSpec, config: ActorCriticConfig, batch_size: int, per_agent: bool = False
) -> float:
    """Matmul FLOPs of one ``update`` of all agents, averaged over MATD3's policy delay.

    Args:
      name: a registered algorithm (its variant gives the critic counts, the critics the
        actor ascends, the policy delay and the action distribution).
      spec: the environment spec.
      config: learner hyperparameters (hidden sizes, policy delay, actor step).
      batch_size: transitions per agent per update (B).
      per_agent: every agent learns from its own batch (``[N, B, N, ...]``).

    Returns:
      FLOPs per update (float).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    variant = variant_of(name, spec, config)
    n, hidden = spec.num_agents, list(config.hidden_sizes)
    dist = make_distribution(spec, config, variant.continuous_default)
    adim, out = dist.action_dim, dist.out_size
    f_a, f1_a = _mlp_flops([spec.obs_dim, *hidden, out])
    f_c, f1_c = _mlp_flops([n * (spec.obs_dim + adim), *hidden, 1])
    critics, delay = variant.num_critics, variant.policy_delay
    actor_critics = len(variant.actor_critics(np.arange(critics)))  # critics the actor uses
    next_actions = (n * n if per_agent else n) * f_a
    critic = n * critics * (f_c + f_c + 2 * f_c - f1_c)
    if actor_step_form(config.actor_step, n) == "full":
        ascended = 2 * f_c
    else:
        ascended = f1_c + 2 * (f_c - f1_c) + 4 * adim * hidden[0]
    actor = n * (f_a + actor_critics * ascended + 2 * f_a - f1_a)
    return float(batch_size * (next_actions + critic + actor / delay))
