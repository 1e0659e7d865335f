"""Actor-critic learners whose critics do not grow with N, optionally shared by a team.

The joint critic of MADDPG (:mod:`~jaxmarl_accel.algos.actor_critic.learner`) reads every agent's
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
  :mod:`~jaxmarl_accel.algos.actor_critic.pic`). Its samples also carry the neighbours'
  observations at
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

Everything else is the skeleton of :mod:`~jaxmarl_accel.algos.actor_critic.learner` and the
algorithm's :class:`~jaxmarl_accel.algos.actor_critic.variant.Variant` (MADDPG, MATD3,
MASAC): critic
regression to ``y_i = r_i + gamma (1 - d_i) (min_c Q'_c(o'_i, a'_i, a'_N'(i)) + alpha H)``
(paper 001 eq. 2) with next actions from the variant's next actors, the actor ascending
its critic through its own action with the neighbours' actions (and observations) from the
replay (paper 001 eq. 1), soft target updates after both (Alg. 1 line 14), MATD3's delay
and MASAC's temperature. Shapes: B sampled joint steps, N agents, G groups, P samples of
one group, k neighbours, A action width, C critics.

Modules: :mod:`.critics` (neighbour finding and critic kinds), :mod:`.groups` (parameter
groups and the static skeleton), :mod:`.observe` (what the learner observes: its samples),
:mod:`.update` (the update and :func:`build`).
"""

from jaxmarl_accel.algos.actor_critic.local_critic.critics import (
    critic_features,
    critic_width,
    make_critic,
    nearest_agents,
    positions,
)
from jaxmarl_accel.algos.actor_critic.local_critic.groups import (
    Block,
    Groups,
    Skeleton,
    init,
    make_groups,
    make_skeleton,
)
from jaxmarl_accel.algos.actor_critic.local_critic.observe import Samples, samples
from jaxmarl_accel.algos.actor_critic.local_critic.update import build

__all__ = ["Block", "Groups", "Samples", "Skeleton", "build", "critic_features", "critic_width",
           "init", "make_critic", "make_groups", "make_skeleton", "nearest_agents", "positions",
           "samples"]
