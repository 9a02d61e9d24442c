"""Freshness: anchors checked against the working tree and git, deterministically."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.anchors import ANCHORS_KEY, Anchors, capture_anchors
from paxm_core.freshness import FreshnessChecker

from .conftest import TAX, commit_all, git


def _anchors(repo: Path, text: str = "src/billing/tax.py: calculate_tax and TaxTable") -> Anchors:
    anchors = capture_anchors(text, str(repo))
    assert anchors is not None
    return anchors


def test_a_memory_whose_anchors_resolve_is_fresh(repo: Path) -> None:
    state = FreshnessChecker().check(_anchors(repo))
    assert not state.stale and state.anchored and state.reason == ""


def test_a_deleted_file_makes_it_stale_with_the_reason(repo: Path) -> None:
    anchors = _anchors(repo)
    (repo / "src" / "billing" / "tax.py").unlink()
    state = FreshnessChecker().check(anchors)
    assert state.stale and state.reason == "src/billing/tax.py no longer exists"


def test_a_symbol_gone_from_its_file_makes_it_stale(repo: Path) -> None:
    checker = FreshnessChecker()
    anchors = _anchors(repo)
    assert not checker.check(anchors).stale  # the file's text is now cached
    (repo / "src" / "billing" / "tax.py").write_text(TAX.replace("calculate_tax", "compute_vat_amount"))
    state = checker.check(anchors)
    assert state.stale and state.reason == "calculate_tax no longer found in src/billing/tax.py"


def test_a_reverted_commit_makes_it_stale(repo: Path) -> None:
    (repo / "src" / "billing" / "rates.py").write_text("RATE_TABLE = {}\n")
    commit_all(repo, "add rates")
    anchors = _anchors(repo, "src/billing/tax.py uses RATE_TABLE from src/billing/rates.py")
    checker = FreshnessChecker()
    assert not checker.check(anchors).stale
    # reverting restores rates.py afterwards, so only the revert itself can tell
    git(repo, "revert", "--no-edit", "HEAD")
    (repo / "src" / "billing" / "rates.py").write_text("RATE_TABLE = {}\n")
    state = checker.check(anchors)
    assert state.stale and state.reason == f"commit {anchors.commit[:10]} was reverted"


def test_nothing_to_judge_by_is_fresh(repo: Path, tmp_path: Path) -> None:
    anchors = _anchors(repo)
    unanchored, garbage = FreshnessChecker().check_hits(
        [SimpleNamespace(metadata={"other": "x"}), SimpleNamespace(metadata={ANCHORS_KEY: "garbage"})]
    )
    assert unanchored.anchored is False
    assert not garbage.stale
    shutil.rmtree(repo)  # the tree is gone: no evidence
    assert not FreshnessChecker().check(anchors).stale


def test_without_git_on_path_a_commit_is_never_called_reverted(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    anchors = _anchors(repo)
    git(repo, "revert", "--no-edit", "HEAD")
    (repo / "src" / "billing").mkdir(parents=True, exist_ok=True)
    (repo / "src" / "billing" / "tax.py").write_text(TAX)
    assert FreshnessChecker().check(anchors).stale
    monkeypatch.setenv("PATH", "/nonexistent")
    assert not FreshnessChecker().check(anchors).stale


# -- properties ------------------------------------------------------------------------------

_NAMES = st.sampled_from(["alpha.py", "beta.ts", "gamma.md", "pkg/delta.py", "pkg/sub/eps.go", "zeta.txt"])
_SYMBOLS = st.sampled_from(["load_config", "RateTable", "parse_row", "emit_event", "HttpClient", "flush_all"])


@st.composite
def _trees(draw: st.DrawFn) -> tuple[dict[str, list[str]], str]:
    """Files with the symbols each defines, and a memory text naming some of both."""
    files = draw(st.dictionaries(_NAMES, st.lists(_SYMBOLS, max_size=3), min_size=1, max_size=5))
    named = draw(st.lists(st.sampled_from(sorted(files)), min_size=1, max_size=4))
    words = named + draw(st.lists(st.sampled_from(["the", "fix", "in", "x.py", "pkg/", "pkg/none.py"]), max_size=6))
    symbols = draw(st.lists(_SYMBOLS, max_size=4))
    return files, " ".join(words + [f"{s}()" for s in symbols])


def _build(root: Path, files: dict[str, list[str]]) -> None:
    if root.exists():
        shutil.rmtree(root)
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for name, symbols in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(f"def {s}(): pass" for s in symbols) + "\n")


def _anchored(tmp_path: Path, tree: tuple[dict[str, list[str]], str]) -> tuple[Path, Anchors | None]:
    """The drawn tree built under ``tmp_path``, and the anchors of its drawn text there."""
    files, text = tree
    root = tmp_path / "tree"
    _build(root, files)
    return root, capture_anchors(text, str(root))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=_trees())
def test_anchors_that_all_resolve_are_never_stale_and_the_answer_is_deterministic(
    tmp_path: Path, tree: tuple[dict[str, list[str]], str]
) -> None:
    _, anchors = _anchored(tmp_path, tree)
    if anchors is None:
        return
    first = FreshnessChecker().check(anchors)
    assert not first.stale, (first, anchors)
    again = [FreshnessChecker().check(anchors) for _ in range(2)]
    assert again == [first, first]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=_trees(), drop=st.data())
def test_stale_exactly_when_an_anchor_stops_resolving(
    tmp_path: Path, tree: tuple[dict[str, list[str]], str], drop: st.DataObject
) -> None:
    root, anchors = _anchored(tmp_path, tree)
    if anchors is None:
        return
    removed = drop.draw(st.sets(st.sampled_from(sorted(anchors.files))))
    for name in removed:
        (root / name).unlink()
    state = FreshnessChecker().check(anchors)
    broken_symbol = any(f in removed for _, f in anchors.symbols)
    assert state.stale == bool(removed or broken_symbol)
    if removed:
        first_gone = next(f for f in anchors.files if f in removed)
        assert state.reason == f"{first_gone} no longer exists"
    assert FreshnessChecker().check(anchors) == state
