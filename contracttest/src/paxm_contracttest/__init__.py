"""The paxm provider contract suite (a pytest plugin)."""
