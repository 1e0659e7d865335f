"""The training phases of papers 000/002 that the characterization times one by one.

Phases (paper 000 Fig. 2/3, paper 002 section V):

* rollout, once per vectorized env step: ``action_selection`` (every agent's actor with
  exploration), ``env_step``, ``buffer_add``;
* update, once per ``update_every`` env steps: ``sampling`` (mini-batch), ``target_q``
  (target actors at ``next_obs`` and target critics -> ``y``), ``q_loss`` (critic forward,
  backward and optimizer step), ``p_loss`` (actor forward through the critic, backward and
  optimizer step), ``target_update`` (soft update of all target networks), and
  ``priority_update`` (PER-style samplers only; identity otherwise).

``target_q``, ``q_loss``, ``p_loss`` and ``target_update`` run the learner's own steps,
its record's phases (``algo_phases``): ``target_q``, ``critic_step``, ``actor_step`` and
``target_update`` (whose composition is ``algo.update``); the check ``sum of phases /
whole step`` compares their times with the whole update.
"""

ROLLOUT_PHASES = ("action_selection", "env_step", "buffer_add")
UPDATE_PHASES = ("sampling", "target_q", "q_loss", "p_loss", "target_update", "priority_update")
PHASES = ROLLOUT_PHASES + UPDATE_PHASES

VALUE_STEP_PHASES = ("action_selection", "env_step")
VALUE_ROUND_PHASES = ("buffer_add", "sampling", "targets", "loss_and_grad", "apply",
                      "target_update", "priority_update")
VALUE_PHASES = VALUE_STEP_PHASES + VALUE_ROUND_PHASES
VALUE_INNER_PHASES = ("agent_forward",)
"""The value-based family's phases (QMIX, VDN, IQL; :mod:`experiments.characterize.value`),
one episode round (``jaxmarl_accel.trainer.rounds.episode``) with E envs, N agents, episodes of
up to T steps and batches of B episodes:

* every env step (T times a round): ``action_selection`` (the recurrent ``algo.policy`` of E
  envs with their available-action masks: GRU step, Q-values, epsilon-greedy) and
  ``env_step`` (E envs' ``env.step`` and the global state and available actions after it,
  ``steps.env_views``);
* every round: ``buffer_add`` (E episodes ``[E, T + 1, ...]`` into the episode replay),
  ``sampling`` (B episodes), ``targets`` (the phases' ``targets``: target agents unrolled
  over ``[B, T + 1, N]``, double-Q bootstrap, target mixer, TD(lambda)), ``loss_and_grad``
  (agent unroll and mixer forward and backward), ``apply`` (clipped Adam step),
  ``target_update`` (the hard copy online -> target, a select when not due) and
  ``priority_update`` (PER-style samplers only; identity otherwise);
* ``agent_forward`` (the phases' ``agent_q``: the online agents unrolled over the batch,
  ``[B, T + 1, N, A]``) is timed too but not summed: ``algo.update`` runs that forward
  once, inside its loss and gradient, and hands it to the targets.
"""
