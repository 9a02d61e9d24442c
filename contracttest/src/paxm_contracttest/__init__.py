"""The paxm provider contract suite (a pytest plugin).

Subclass :class:`ProviderContract` in a test module of your provider package, override the
``paxm_provider_type`` fixture, install your package, run pytest (``docs/writing-providers.md``);
likewise :class:`IntegrationContract` for a harness integration (``docs/writing-integrations.md``).
Importing this package has no side effects beyond asking
pytest to rewrite asserts in the helper modules (so failures explain themselves).
"""

from __future__ import annotations

import pytest

# Must run before the helper modules are imported, so their asserts are rewritten even when
# the plugin is loaded with -p rather than through its pytest11 entry point.
pytest.register_assert_rewrite(
    "paxm_contracttest.checks",
    "paxm_contracttest.contract",
    "paxm_contracttest.generated_file_contract",
    "paxm_contracttest.integration_contract",
    "paxm_contracttest.node_plugin",
)

from paxm_contracttest import integration_contract  # noqa: E402
from paxm_contracttest.contract import ProviderContract, ReadAfterWrite  # noqa: E402
from paxm_contracttest.integration_contract import *  # noqa: E402,F403  (its __all__: the integration kit)

__all__ = ["ProviderContract", "ReadAfterWrite", *integration_contract.__all__]
