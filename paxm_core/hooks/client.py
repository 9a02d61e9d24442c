"""Compatibility shim: hook commands installed before the passive runtime moved to ``paxm_core/passive``.

Those commands run ``<python> -I -S .../paxm_core/hooks/client.py ...``; this file runs the
current client (``paxm_core/passive/client.py``) with the same arguments, so they keep working
until ``paxm setup`` rewrites them.  Like the client, it is a script, never imported.
"""

if __name__ == "__main__":
    import sys

    sys.path.append(__file__.rpartition("/")[0].rpartition("/")[0] + "/passive")
    from client_core import main  # type: ignore[import-not-found]

    main()
