"""MASAC: soft actor-critic (Haarnoja et al. 2018) with MADDPG's centralized critics.

The critic target adds the entropy bonus of agent i's own policy at ``o'_i`` (SAC eq. 3)
with next actions from the current actors (SAC has no target actor) and clipped double-Q
(two critics, min in the target and in the actor loss, as in SAC's reference code). The
actor minimizes ``alpha_i * log pi_i - Q_i`` (SAC eq. 12). The entropy coefficient is 0.05
(paper 002) or tuned per agent toward a target entropy (SAC v2, eq. 18).

Discrete actions: Gumbel-softmax relaxation of the categorical for the critic's action
input (as in MADDPG), with the *exact* categorical entropy ``-sum_a p log p`` as the bonus
(not a single-sample ``-log pi(a)`` estimate). Continuous actions: squashed Gaussian with
the reparameterized single-sample ``-log pi(a)``.
"""

from __future__ import annotations

from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic import variant as v
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.envs.base import EnvSpec


def variant(spec: EnvSpec, config: ActorCriticConfig) -> v.Variant:
    """MASAC: twin critics (min), stochastic actors, entropy bonus, no delay; the
    temperature is tuned with ``config.auto_alpha``."""
    del spec
    temperature = losses.sac_temperature_step if config.auto_alpha else losses.fixed_temperature
    return v.Variant(num_critics=2, actor_schedule=v.actor_schedule(1),
                     continuous_default="gaussian", next_action=v.sampled_next_action,
                     next_actors=v.online_actors, actor_critics=v.all_critics,
                     alpha=v.entropy_coefficient, temperature=temperature)
