"""A new user's first runs: the agents setup offers, its defaults, switching agents, a broken config.

Every test runs the real CLI in a subprocess with every workspace distribution installed, in
a fresh home (the autouse ``isolated_home`` fixture); a harness is "on this machine" when its
config directory exists there.
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
import yaml

from paxm_contracttest.sandbox import run_paxm as paxm
from paxm_core.config.setup import SetupCatalog
from paxm_core.install_hints import integration_install_hint
from paxm_core.plugins import get_plugin_manager

#: upstream's agent names (its built-in config's ``agents`` keys)
UPSTREAM_AGENTS = ("opencode", "claude", "codex", "pi", "cursor", "trae", "trae-cn", "kimi", "zcode", "kiro", "cline")
BROKEN_YAML = "providers:\n  sqlite: {enabled: true\nagents: [\n"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return tmp_path / "cfg" / "config.yaml"


def _catalog() -> SetupCatalog:
    return SetupCatalog.from_plugins(get_plugin_manager())


def _option_labels(prompt_text: str, question: str) -> list[str]:
    """The labels of the numbered list printed under ``question`` (piped setup's selector)."""
    block = prompt_text.split(f"{question}:\n", 1)[1].split("Choose numbers", 1)[0]
    return [re.sub(r"^\s*\d+\) \[[x ]\] ", "", line) for line in block.splitlines() if line.strip()]


# ----------------------------------------------------------------------------- item 1: every integration


def test_piped_setup_offers_every_installed_integration_once(config: Path, isolated_home: Path) -> None:
    (isolated_home / ".gemini").mkdir()
    done = paxm(config, "setup", stdin="\n\nn\n")  # default providers, default agents, do not apply
    assert done.returncode == 0, done.stderr
    labels = _option_labels(done.stderr, "Agents to connect")
    catalog = _catalog()
    for name in catalog.integrations:
        shown = [label for label in labels if label.startswith(catalog.display_name(name) + " (")]
        assert len(shown) == 1, (name, labels)
    assert len(labels) == len(catalog.integrations), labels  # nothing else: no second "kimi"
    assert "Gemini CLI (detected)" in labels
    assert not [label for label in labels if "pip install" in label], labels
    ticked = [line for line in done.stderr.splitlines() if re.match(r"\s*\d+\) \[x\]", line)]
    assert any("Gemini CLI" in line for line in ticked) and not any("Codex" in line for line in ticked)


@pytest.mark.parametrize("name", UPSTREAM_AGENTS)
def test_every_upstream_agent_name_installs_and_uninstalls_its_integration(config: Path, name: str) -> None:
    catalog = _catalog()
    canonical = catalog.canonical_agent(name)
    assert canonical in catalog.integrations, name
    done = paxm(config, "setup", "--yes", "--agent", name, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["agents"] == [canonical]
    assert summary["integrations"] == {canonical: "installed"}
    agents = yaml.safe_load(config.read_text())["agents"]
    assert agents[canonical]["enabled"] is True
    assert name == canonical or name not in agents  # one entry per agent, under paxm's name
    gone = paxm(config, "uninstall", "--agent", name, "--yes")
    assert gone.returncode == 0, gone.stderr
    assert f"uninstalled {catalog.display_name(canonical)} passive integration" in gone.stdout


def test_an_upstream_config_with_kimi_connects_kimi_code(config: Path, isolated_home: Path) -> None:
    config.parent.mkdir(parents=True)
    config.write_text("providers:\n  sqlite: {type: sqlite, enabled: true}\nagents:\n  kimi: {enabled: true}\n")
    done = paxm(config, "setup", "--yes", "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["integrations"] == {"kimi-code": "installed"}
    agents = yaml.safe_load(config.read_text())["agents"]
    assert agents["kimi-code"]["enabled"] is True and "kimi" not in agents
    toml = isolated_home / ".kimi-code" / "config.toml"
    assert "--target" in toml.read_text()
    gone = paxm(config, "uninstall", "--yes")
    assert gone.returncode == 0, gone.stderr
    assert re.findall(r"^uninstalled .*$", gone.stdout, flags=re.M) == ["uninstalled Kimi Code passive integration"]
    assert not toml.exists() or "--target" not in toml.read_text()  # a file paxm created goes with its hooks


def test_an_install_hint_never_names_an_installed_distribution() -> None:
    for agent in ("kimi", "kimi-code", "gemini", "cline", "qwen", "copilot", "claude", "codex"):
        hint = integration_install_hint(agent)
        assert "pip install" not in hint, (agent, hint)


# ----------------------------------------------------------------------------- item 2: defaults


def test_accepting_the_defaults_without_codex_creates_nothing_for_it(config: Path, isolated_home: Path) -> None:
    done = paxm(config, "setup", "--yes")
    assert done.returncode == 0, done.stderr
    assert not (isolated_home / ".codex").exists()
    assert "Codex" not in done.stdout + done.stderr and "trust" not in done.stdout + done.stderr
    assert "no agent is connected" in done.stdout
    assert yaml.safe_load(config.read_text())["agents"]["codex"]["enabled"] is False
    # the same through the questions, every default accepted
    again = paxm(config, "setup", "--force", stdin="\n\n\n")
    assert again.returncode == 0, again.stderr
    assert not (isolated_home / ".codex").exists()


def test_a_detected_harness_is_the_default(config: Path, isolated_home: Path) -> None:
    (isolated_home / ".claude").mkdir()
    done = paxm(config, "setup", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["agents"] == ["claude"]
    assert not (isolated_home / ".codex").exists()


def _agent_of_recalled(config: Path) -> str:
    found = paxm(config, "recall", "--query", "blue-green", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits, found.stdout
    return str(hits[0]["origin"]["agent_id"])


def test_a_cli_write_says_it_came_from_the_cli(config: Path, isolated_home: Path) -> None:
    stored = paxm(config, "remember", "--text", "We deploy with blue-green releases")
    assert stored.returncode == 0, stored.stderr
    assert _agent_of_recalled(config).startswith("cli-")  # not codex-<user> (upstream's default agent)
    # with one agent connected, the CLI still writes as itself, not as that agent
    (isolated_home / ".claude").mkdir()
    assert paxm(config, "setup", "--yes", "--user-id", "alice").returncode == 0
    assert paxm(config, "remember", "--text", "Staging uses blue-green too").returncode == 0
    text = paxm(config, "recall", "--query", "staging blue-green")
    assert "Agent: cli-alice" in text.stdout, text.stdout


# ----------------------------------------------------------------------------- item 3: switching agents


def _paxm_hook_count(path: Path) -> int:
    return path.read_text().count("--target") if path.exists() else 0


def test_switching_agents_removes_the_old_agents_hooks(config: Path, isolated_home: Path) -> None:
    first = paxm(config, "setup", "--yes", "--agent", "gemini-cli")
    assert first.returncode == 0, first.stderr
    settings = isolated_home / ".gemini" / "settings.json"
    assert _paxm_hook_count(settings) > 0
    switched = paxm(config, "setup", "--yes", "--force", "--agent", "cline", "--json")
    assert switched.returncode == 0, switched.stderr
    summary = json.loads(switched.stdout)
    assert summary["agents"] == ["cline"] and summary["removed_hooks"] == ["gemini-cli"]
    assert "Gemini CLI: no longer enabled; its paxm hooks were removed" in summary["messages"]
    assert _paxm_hook_count(settings) == 0
    assert yaml.safe_load(config.read_text())["agents"]["gemini-cli"]["enabled"] is False


def test_uninstall_reports_exactly_what_it_removed(config: Path) -> None:
    nothing = paxm(config, "uninstall", "--yes")
    assert nothing.returncode == 0, nothing.stderr
    assert "uninstalled" not in nothing.stdout
    assert "nothing to remove" in nothing.stdout
    assert paxm(config, "setup", "--yes", "--agent", "claude").returncode == 0
    done = paxm(config, "uninstall", "--yes")
    assert done.returncode == 0, done.stderr
    assert re.findall(r"^uninstalled .*$", done.stdout, flags=re.M) == ["uninstalled Claude Code passive integration"]
    one = paxm(config, "uninstall", "--agent", "codex", "--yes")
    assert one.returncode == 0 and "uninstalled" not in one.stdout
    assert "Codex: no paxm hooks were installed for this config; nothing to remove" in one.stdout


# ----------------------------------------------------------------------------- item 4: a broken config


def _break(config: Path) -> bytes:
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(BROKEN_YAML)
    return config.read_bytes()


def test_uninstall_works_whatever_the_config_says(config: Path, isolated_home: Path) -> None:
    assert paxm(config, "setup", "--yes", "--agent", "claude").returncode == 0
    settings = isolated_home / ".claude" / "settings.json"
    assert _paxm_hook_count(settings) > 0
    broken = _break(config)
    done = paxm(config, "uninstall", "--yes")
    assert done.returncode == 0, done.stderr
    assert "uninstalled Claude Code passive integration" in done.stdout
    assert "cannot be read" in done.stderr
    assert _paxm_hook_count(settings) == 0
    assert config.read_bytes() == broken  # left as it is


def test_the_parse_error_names_the_ways_out(config: Path) -> None:
    _break(config)
    done = paxm(config, "recall", "--query", "x")
    assert done.returncode != 0
    assert "invalid YAML" in done.stderr
    assert "paxm setup --yes --force" in done.stderr and "paxm uninstall --yes" in done.stderr
    plain = paxm(config, "setup", "--yes")
    assert plain.returncode == 1
    assert "setup stops here" in plain.stderr and "paxm setup --yes --force" in plain.stderr
    assert config.read_text() == BROKEN_YAML


def test_setup_yes_force_moves_a_broken_config_aside_and_starts_again(config: Path) -> None:
    broken = _break(config)
    done = paxm(config, "setup", "--yes", "--force")
    assert done.returncode == 0, done.stderr
    kept = list(config.parent.glob("config.yaml.broken-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == broken
    assert stat.S_IMODE(kept[0].stat().st_mode) == 0o600
    assert f"moved the unreadable config aside to {kept[0]}" in done.stdout
    assert yaml.safe_load(config.read_text())["providers"]["sqlite"]["enabled"] is True
    assert paxm(config, "config", "doctor").returncode in (0, 1)  # it loads (doctor may warn)
    assert paxm(config, "recall", "--query", "x").returncode == 0


def test_interactive_setup_offers_to_move_a_broken_config_aside(config: Path) -> None:
    broken = _break(config)
    declined = paxm(config, "setup", stdin="n\n")
    assert declined.returncode == 0, declined.stderr
    assert "cannot be read" in declined.stderr and "Move it aside" in declined.stderr
    assert config.read_bytes() == broken and not list(config.parent.glob("*.broken-*"))
    accepted = paxm(config, "setup", stdin="y\n\n\n\n")
    assert accepted.returncode == 0, accepted.stderr
    kept = list(config.parent.glob("config.yaml.broken-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == broken
    assert yaml.safe_load(config.read_text())["version"] == 1


def test_a_symlinked_broken_config_is_not_moved(config: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.yaml"
    target.write_text(BROKEN_YAML)
    config.parent.mkdir(parents=True)
    config.symlink_to(target)
    done = paxm(config, "setup", "--yes", "--force")
    assert done.returncode == 1
    assert "is a symlink" in done.stderr
    assert config.is_symlink() and target.read_text() == BROKEN_YAML
    assert not list(config.parent.glob("*.broken-*"))
