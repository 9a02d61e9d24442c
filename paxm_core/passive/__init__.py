"""Passive memory: hook events in, context out, turns captured (see ``docs/hooks.md``).

Nothing is imported here, so the hook client loads only the modules it uses.
"""
