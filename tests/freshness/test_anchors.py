"""Code anchors recorded at capture: files of the working tree, symbols in them, HEAD."""

from __future__ import annotations

import os
from pathlib import Path

from paxm_core.anchors import (
    ANCHORS_KEY,
    Anchors,
    anchor_metadata,
    capture_anchors,
    head_commit,
    merge_anchor_values,
    read_anchors,
)

from .conftest import commit_all, git


def test_files_symbols_and_head_are_recorded(repo: Path) -> None:
    text = "VAT is computed in src/billing/tax.py by calculate_tax() and the `TaxTable`; ignore nosuch_helper."
    anchors = capture_anchors(text, str(repo))
    assert anchors is not None
    assert anchors.root == str(repo)
    assert anchors.files == ("src/billing/tax.py",)
    assert anchors.symbols == (("calculate_tax", "src/billing/tax.py"), ("TaxTable", "src/billing/tax.py"))
    assert anchors.commit == git(repo, "rev-parse", "HEAD").strip() == head_commit(str(repo))


def test_paths_resolve_from_the_directory_and_the_top_level_and_absolute(repo: Path) -> None:
    sub = repo / "src"
    assert capture_anchors("see billing/tax.py", str(sub)).files == ("src/billing/tax.py",)  # type: ignore[union-attr]
    assert capture_anchors("see README.md.", str(sub)).files == ("README.md",)  # type: ignore[union-attr]
    absolute = f"Edited {repo}/src/billing/tax.py today"
    assert capture_anchors(absolute, str(repo)).files == ("src/billing/tax.py",)  # type: ignore[union-attr]


def test_nothing_is_anchored_without_an_existing_file(repo: Path, tmp_path: Path) -> None:
    assert capture_anchors("We talked about calculate_tax and src/billing/vat.py", str(repo)) is None
    assert capture_anchors("src/billing/tax.py", str(tmp_path / "elsewhere")) is None  # not in a tree
    (repo.parent / "x.md").write_text("outside")
    assert capture_anchors("../../x.md and /etc/passwd and .git/HEAD", str(repo / "src")) is None
    assert capture_anchors("../README.md", str(repo / "src")).files == ("README.md",)  # type: ignore[union-attr]


def test_a_symlink_is_never_followed(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def secret_fn(): pass\n")
    os.symlink(outside, repo / "link.py")
    os.symlink(repo / "src", repo / "srclink")
    assert capture_anchors("link.py has secret_fn", str(repo)) is None
    assert capture_anchors("srclink/billing/tax.py", str(repo)) is None


def test_head_of_a_branch_packed_ref_and_detached_head(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "pack-refs", "--all")
    assert head_commit(str(repo)) == first
    (repo / "README.md").write_text("# changed\n")
    second = commit_all(repo, "second")
    assert head_commit(str(repo)) == second
    git(repo, "checkout", "-q", "--detach", first)
    assert head_commit(str(repo)) == first


def test_an_episode_keeps_the_union_of_its_events_anchors(repo: Path) -> None:
    a = capture_anchors("src/billing/tax.py calculate_tax", str(repo))
    b = capture_anchors("README.md", str(repo))
    assert a is not None and b is not None
    merged = read_anchors({ANCHORS_KEY: merge_anchor_values([a.to_value(), b.to_value(), a.to_value()])})
    assert merged == Anchors(str(repo), a.commit, ("src/billing/tax.py", "README.md"), a.symbols)


def test_stored_anchors_that_leave_their_root_are_refused() -> None:
    bad = '{"root":"/r","files":["../etc/passwd","/abs","ok.py"],"symbols":[["x","../y"]]}'
    assert read_anchors({ANCHORS_KEY: bad}) == Anchors("/r", "", ("ok.py",), ())
    assert read_anchors({ANCHORS_KEY: '{"root":"relative","files":["a.py"]}'}) is None
    assert read_anchors({ANCHORS_KEY: "not json"}) is None
    assert read_anchors({}) is None


def test_callers_cannot_set_anchors_and_the_switch_turns_capture_off(repo: Path) -> None:
    forged = {ANCHORS_KEY: '{"root":"/","files":["etc/passwd"]}', "k": "v"}
    assert anchor_metadata(forged, "nothing here", str(repo)) == {"k": "v"}
    on = anchor_metadata({}, "src/billing/tax.py", str(repo))
    assert read_anchors(on) is not None
    assert anchor_metadata({}, "src/billing/tax.py", str(repo), enabled=False) == {}
