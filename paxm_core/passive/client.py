"""The hook client script (see :mod:`paxm_core.passive.client_core` for what it does).

Harnesses run ``<python> -I -S <this file> ...``.  A script is compiled on every run, so this
file stays tiny and imports the implementation as a module, which Python loads from cached
bytecode.  Its directory goes at the *end* of ``sys.path`` so nothing here can shadow a
standard-library module.
"""

if __name__ == "__main__":
    import sys

    sys.path.append(__file__.rpartition("/")[0])
    from client_core import main  # type: ignore[import-not-found]

    main()
