"""``paxm eval``: upstream's eval suites (``run``) and the LoCoMo benchmark (``locomo``, ``cleanup``)."""
