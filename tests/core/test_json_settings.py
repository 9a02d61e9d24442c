"""``paxm_core.json_settings``: the careful read / merge / write every JSON-settings integration shares."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.api.errors import IntegrationError
from paxm_core.json_settings import BACKUP_SUFFIX, merge_hook_groups, read_json_object, write_json_object

OURS = "paxm-hook run"


def is_ours(command: str) -> bool:
    return command.startswith(OURS)


def group(command: str, matcher: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
    return {"matcher": matcher, **body} if matcher is not None else body


def test_read_reports_where_the_json_breaks_and_never_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert read_json_object(path, "settings") == ({}, None)
    path.write_text("")
    assert read_json_object(path, "settings") == ({}, b"")
    path.write_text('{\n  "a": 1,\n  oops\n}')
    with pytest.raises(IntegrationError, match=r"not valid JSON \(line 3, column 3\); fix or move it, paxm changed"):
        read_json_object(path, "settings")
    path.write_text("[1, 2]")
    with pytest.raises(IntegrationError, match="must hold a JSON object"):
        read_json_object(path, "settings")
    with pytest.raises(IntegrationError, match="remove the comments"):
        path.write_text("// hi\n{}")
        read_json_object(path, "settings", hint="remove the comments")


def test_write_is_private_atomic_at_the_symlink_target_and_backs_up_once(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}')
    link = tmp_path / "linked" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    old = os.umask(0o022)
    try:
        data, original = read_json_object(link, "settings")
        write_json_object(link, {**data, "hooks": {}}, original)
        write_json_object(link, {"theme": "light"}, link.read_bytes())
    finally:
        os.umask(old)
    assert link.is_symlink() and json.loads(real.read_text()) == {"theme": "light"}
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    backup = link.with_name(link.name + BACKUP_SUFFIX)
    assert backup.read_text() == '{"theme": "dark"}'  # the user's first version, never overwritten
    nested = tmp_path / "new" / "deep" / "settings.json"
    write_json_object(nested, {"a": 1})
    assert stat.S_IMODE(nested.parent.stat().st_mode) == 0o700
    assert not nested.with_name(nested.name + BACKUP_SUFFIX).exists()  # nothing to back up


def test_merge_keeps_the_users_handlers_and_switches_and_is_idempotent() -> None:
    user: dict[str, Any] = {
        "theme": "dark",
        "hooks": {
            "enabled": True,
            "BeforeAgent": [group("my-own-hook", "*"), group(OURS + " --stale")],
            "AfterAgent": [{"hooks": [{"type": "command", "command": "mine"}, {"command": OURS + " --old"}]}],
        },
    }
    wanted = {"BeforeAgent": group(OURS + " before"), "SessionStart": group(OURS + " start")}
    merged = merge_hook_groups(user, wanted, is_ours, switches={"enabled"})
    assert merged["hooks"]["enabled"] is True and merged["theme"] == "dark"
    assert merged["hooks"]["BeforeAgent"] == [group("my-own-hook", "*"), group(OURS + " before")]
    assert merged["hooks"]["AfterAgent"] == [{"hooks": [{"type": "command", "command": "mine"}]}]
    assert merged["hooks"]["SessionStart"] == [group(OURS + " start")]
    assert merge_hook_groups(merged, wanted, is_ours, switches={"enabled"}) == merged
    assert user["hooks"]["BeforeAgent"][1] == group(OURS + " --stale")  # the input is untouched
    with pytest.raises(IntegrationError, match="hooks.enabled must be a JSON array"):
        merge_hook_groups(user, wanted, is_ours)  # without the switch declared, its shape is wrong


commands = st.text(st.characters(codec="utf-8"), max_size=12).filter(lambda c: not is_ours(c))
user_groups = st.lists(
    st.builds(lambda c, m: group(c, m), commands, st.one_of(st.none(), st.sampled_from(["*", "Bash", ""]))),
    max_size=3,
)
user_settings = st.fixed_dictionaries(
    {"hooks": st.dictionaries(st.sampled_from(["BeforeAgent", "AfterAgent", "Stop"]), user_groups, max_size=3)},
    optional={"model": st.text(max_size=5)},
)


@settings(max_examples=150, deadline=None)
@given(user_settings)
def test_install_then_uninstall_gives_back_any_user_settings(user: dict[str, Any]) -> None:
    wanted = {"BeforeAgent": group(OURS + " before"), "AfterAgent": group(OURS + " after")}
    installed = merge_hook_groups(user, wanted, is_ours)
    assert merge_hook_groups(installed, wanted, is_ours) == installed
    removed = merge_hook_groups(installed, {}, is_ours)
    # an empty event list means nothing: the ones paxm wrote into may go, the user's others stay
    assert removed == user or removed == _without_empty_events(user, wanted)


def _without_empty_events(settings: dict[str, Any], touched: Any) -> dict[str, Any]:
    hooks = {event: groups for event, groups in settings["hooks"].items() if groups or event not in touched}
    rest = {k: v for k, v in settings.items() if k != "hooks"}
    return {**rest, "hooks": hooks} if hooks else rest


def test_a_directory_where_the_settings_file_should_be_is_named_as_such(tmp_path: Path) -> None:
    where = tmp_path / "settings.json"
    where.mkdir()
    with pytest.raises(IntegrationError, match=r"settings file .*settings\.json is a directory; paxm changed nothing"):
        read_json_object(where, "settings file")
    assert where.is_dir() and not any(where.iterdir())
