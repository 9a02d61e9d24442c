"""Passive memory: hook events in, context out, turns captured (see ``docs/hooks.md``).

Import-light on purpose: nothing is imported here, so the hook client and ``paxm_core.integration``
load only the modules they use.  Integration authors import from :mod:`paxm_core.integration`.
"""
