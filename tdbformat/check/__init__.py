"""The checks: validate, salvage, coverage, stats, repair plans; what a dataset (an array, or a group and every
member below it) holds and costs, and which readers open it: ``versions`` (:mod:`.gate`), ``du``, ``explain``,
``history``, ``mbrs``."""
