"""Passive memory: hook events in, context out, turns captured (see ``docs/hooks.md``).

Where things are: the runtime (``passive.py``, settings resolved once per event by
``policy.resolve_hook_settings``), the daemon (``daemon.py``, ``processor.py``, ``control.py``,
``inprocess.py``) and **the hook client**: ``client.py`` is the script every installed hook runs
(its path is baked into harness settings, so it never moves), ``client_core.py`` its stdlib-only
implementation, ``client_command.py`` builds the command line integrations install (the three
``client*`` files are the whole hook client).
``paxm_core/hooks/client.py`` only keeps commands installed before this package was renamed
working.

Import-light on purpose: nothing is imported here, so the hook client and ``paxm_core.integration``
load only the modules they use.  Integration authors import from :mod:`paxm_core.integration`.
"""
