"""The training phases of papers 000/002 that the characterization times one by one.

Phases (paper 000 Fig. 2/3, paper 002 section V):

* rollout, once per vectorized env step: ``action_selection`` (every agent's actor with
  exploration), ``env_step``, ``buffer_add``;
* update, once per ``update_every`` env steps: ``sampling`` (mini-batch), ``target_q``
  (target actors at ``next_obs`` and target critics -> ``y``), ``q_loss`` (critic forward,
  backward and optimizer step), ``p_loss`` (actor forward through the critic, backward and
  optimizer step), ``target_update`` (soft update of all target networks), and
  ``priority_update`` (PER-style samplers only; identity otherwise).

``target_q``, ``q_loss``, ``p_loss`` and ``target_update`` run the learner's own steps
``algo.phases.target_q``, ``critic_step``, ``actor_step`` and ``target_update`` (whose
composition is ``algo.update``); the check ``sum of phases / whole step`` compares their
times with the whole update.
"""

ROLLOUT_PHASES = ("action_selection", "env_step", "buffer_add")
UPDATE_PHASES = ("sampling", "target_q", "q_loss", "p_loss", "target_update", "priority_update")
PHASES = ROLLOUT_PHASES + UPDATE_PHASES
