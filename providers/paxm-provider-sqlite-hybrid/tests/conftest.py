"""Every test runs with HOME/XDG/PAXM_* pointed at a temp dir (the kit's fixture)."""

from __future__ import annotations

from paxm_contracttest.fakes import isolated_home, paxm_unset_env  # noqa: F401  (autouse: no test touches the real home)
