"""The actor-critic family (MADDPG, MATD3, MASAC; papers 001-003): one skeleton
(:mod:`~.learner`) with its configuration (:mod:`~.config`), the per-algorithm pieces it
plugs in (:mod:`~.variant`, :mod:`~.maddpg`, :mod:`~.matd3`, :mod:`~.masac`), the losses
(:mod:`~.losses`), the map over agents (:mod:`~.agent_map`) and the neighbourhood critics
for many agents (:mod:`~.local_critic`, :mod:`~.pic`)."""
