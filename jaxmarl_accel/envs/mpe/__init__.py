"""The MPE scenarios on one shared physics core (:mod:`~.core`), assembled by
:mod:`~.scenario`; each ``simple_<name>`` module has the ``make`` that
:func:`jaxmarl_accel.envs.make` calls."""
