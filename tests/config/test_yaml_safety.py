"""Item 7 of issue 13: alias bombs and duplicate keys are rejected quickly, with the line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from paxm_core.config import ConfigError, load_config

BOMB = textwrap.dedent(
    """\
    version: 1
    identity:
      user_id: alice
    providers:
      sqlite:
        type: sqlite
        enabled: true
        extra_a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
        extra_b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
        extra_c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
        extra_d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
        extra_e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
        extra_f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
        extra_g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
        extra_h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
        extra_i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
    """
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_alias_bomb_is_rejected_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, BOMB))
    message = str(err.value)
    assert "alias" in message and "line " in message
    assert "line 1 " not in message


def test_config_show_json_on_a_bomb_fails_fast_in_bounded_memory(tmp_path: Path) -> None:
    path = _write(tmp_path, BOMB)

    def limit() -> None:  # a real bomb would need gigabytes: 1 GiB is plenty for a clear error
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from paxm_core.cli import main; main()",
            "--config",
            str(path),
            "config",
            "show",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,  # noqa: PLW1509
        env={**os.environ},
    )
    assert out.returncode != 0
    assert "alias" in out.stderr and "Traceback" not in out.stderr and "MemoryError" not in out.stderr
    assert len(out.stdout) < 10_000


def test_a_few_aliases_still_work(tmp_path: Path) -> None:
    text = BOMB.split("    extra_b")[0] + "    extra_z: *a\n"
    config = load_config(_write(tmp_path, text))
    assert config.providers["sqlite"].extra["extra_z"] == ["lol"] * 9


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("version: 1\nidentity:\n  user_id: alice\n  user_id: bob\n", 4),
        ("version: 1\nproviders:\n  sqlite:\n    type: sqlite\n  sqlite:\n    type: sqlite\n", 5),
        ("version: 1\nversion: 1\n", 2),
    ],
)
def test_duplicate_keys_are_rejected_with_their_line(tmp_path: Path, text: str, line: int) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text))
    assert "duplicate key" in str(err.value) and f"line {line}" in str(err.value)


def test_recursive_alias_is_rejected(tmp_path: Path) -> None:
    text = "version: 1\nproviders:\n  sqlite:\n    type: sqlite\n    loop: &l [*l]\n"
    with pytest.raises(ConfigError):
        load_config(_write(tmp_path, text))
