"""pytest11 entry point of ``paxm-contracttest``.

It only declares the ``paxm_contract`` marker: the checks and fixtures live on
:class:`paxm_contracttest.ProviderContract`, so nothing runs unless a test class subclasses
it.  No autouse fixtures, no work at import time.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_configure"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "paxm_contract: a check of the paxm provider contract (added by paxm-contracttest)"
    )
