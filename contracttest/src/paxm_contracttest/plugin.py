"""pytest11 entry point: registers the contract fixtures; no side effects on import."""
