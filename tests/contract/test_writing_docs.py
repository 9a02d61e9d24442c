"""The pages for third-party authors list the files of their example package and name every check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_package_kit import ROOT, doc_files

INTEGRATIONS = ROOT / "docs" / "writing-integrations.md"
PROVIDERS = ROOT / "docs" / "writing-providers.md"


@pytest.mark.parametrize(
    ("doc", "files"),
    [
        (
            INTEGRATIONS,
            [
                "myharness/pyproject.toml",
                "myharness/src/paxm_myharness/__init__.py",
                "myharness/tests/fixtures/prompt.json",
                "myharness/tests/test_contract.py",
            ],
        ),
        (
            PROVIDERS,
            [
                "mystore/pyproject.toml",
                "mystore/src/paxm_mystore/__init__.py",
                "mystore/src/paxm_mystore/provider.py",
                "mystore/tests/test_contract.py",
            ],
        ),
    ],
    ids=["integrations", "providers"],
)
def test_doc_lists_the_package_files(doc: Path, files: list[str]) -> None:
    assert sorted(doc_files(doc)) == files


@pytest.mark.parametrize(
    ("doc", "contract", "pattern"),
    [
        (INTEGRATIONS, "IntegrationContract", r"`(test_contract_[a-z_]+)`"),
        (PROVIDERS, "ProviderContract", r"`(test_[a-z_]+)"),
    ],
    ids=["integrations", "providers"],
)
def test_doc_table_names_every_check(doc: Path, contract: str, pattern: str) -> None:
    import paxm_contracttest

    suite = getattr(paxm_contracttest, contract)
    checks = {name for name in dir(suite) if name.startswith("test_")}
    documented = set(re.findall(pattern, doc.read_text()))
    assert checks == documented, f"undocumented: {checks - documented}; stale: {documented - checks}"
