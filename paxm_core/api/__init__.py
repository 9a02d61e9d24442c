"""The plugin contract: wire types, provider and integration protocols, hook events, errors,
hookspecs and deadlines.

Every module here imports only the standard library, pluggy, click (for the command
hookspec) and other modules of this package: providers, integrations and the rest of the core
build on it, and it builds on none of them.
"""
