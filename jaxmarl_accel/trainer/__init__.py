"""The trainer layer: the state a run carries and the rounds that advance it (:mod:`~.rounds`),
the jitted steps they are made of (:mod:`~.steps`), the chunked shell that runs them
(:mod:`~.train`), its multi-device form (:mod:`~.sharding`) and the XLA options they are
compiled with (:mod:`~.compiling`)."""
