"""``paxm update``: upgrade paxm and every installed paxm distribution together to one version.

paxm's distributions pin each other to one version (``paxm-provider-sqlite`` needs
``paxm==X``), so an upgrade moves all of them at once: ``paxm``, each ``paxm-provider-*``,
``paxm-integration-*`` and ``paxm-contracttest`` present in the environment paxm runs from.
The installer is the one that made that environment (:mod:`paxm_core.cli.update_detect`); the
target is the newest version the index offers for *every* one of them
(:mod:`paxm_core.cli.update_index`).

Exit codes: 0 up to date or updated; 1 an error (index unreachable, installer failed, the
versions after the install are not the target); 3 refused (paxm cannot tell how it was
installed: the command to run is printed); 100 ``--check`` found a newer version.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from paxm_core.api.errors import PaxmError
from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.cli.common import echo_json, json_flag

if TYPE_CHECKING:
    from paxm_core.cli.update_detect import UpdatePlan

__all__ = ["update"]

EXIT_REFUSED = 3
EXIT_UPDATE_AVAILABLE = 100
_FAMILY_PREFIXES = ("paxm-provider-", "paxm-integration-")
_VERIFY = (
    "import json, importlib.metadata as m\n"
    "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version for d in m.distributions()"
    " if d.metadata['Name']}))"
)


def _is_family(name: str) -> bool:
    return name in ("paxm", "paxm-contracttest") or name.startswith(_FAMILY_PREFIXES)


def family_distributions() -> dict[str, str]:
    """``{name: version}`` of the paxm distributions importable here (``paxm`` first)."""
    from paxm_core.cli.info_cmds import installed_distributions

    found = [(name, ver) for name, ver in installed_distributions() if _is_family(name)]
    return dict(sorted(found, key=lambda row: (row[0] != "paxm", row[0])))


def _paxm_is_editable() -> bool:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        info = json.loads(distribution("paxm").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        return False
    return bool(isinstance(info, dict) and (info.get("dir_info") or {}).get("editable"))


def _choose_target(installed: dict[str, str], offered: dict[str, set[str]], wanted: str | None, pre: bool) -> str:
    """The newest version every installed distribution is offered at (or ``wanted``, checked)."""
    from paxm_core.cli.update_index import is_prerelease, version_key

    if wanted:
        missing = [name for name in installed if wanted not in offered.get(name, set())]
        if missing:
            raise PaxmError(f"version {wanted} is not on the index for: {', '.join(missing)}")
        return wanted
    if not offered.get("paxm"):
        raise PaxmError("the package index has no release of paxm (pass --index-url for a private index)")
    common = set.intersection(*(offered.get(name, set()) for name in installed))
    candidates = [v for v in common if pre or not is_prerelease(v)]
    if not candidates:
        lacking = sorted(name for name in installed if not offered.get(name))
        raise PaxmError(
            "the package index offers no version of every installed paxm distribution in common"
            + (f" (none at all of {', '.join(lacking)})" if lacking else "")
        )
    return max(candidates, key=lambda v: version_key(v) or ())


def _installed_after(python: str) -> dict[str, str]:
    """What the updated environment holds, asked of its own interpreter (this process is stale)."""
    done = subprocess.run([python, "-c", _VERIFY], capture_output=True, text=True, timeout=120, check=False)
    try:
        versions = json.loads(done.stdout)
    except ValueError:
        raise PaxmError(f"cannot read the updated environment: {done.stderr.strip()[-300:]}") from None
    return {str(k): str(v) for k, v in versions.items() if _is_family(str(k))}


def _restart_hook_daemon(prefix: Path, config_path: str | None) -> None:
    """Stop a running hook daemon so the next prompt starts one on the new code (failure: a warning)."""
    paxm = prefix / "bin" / "paxm"
    if not paxm.exists():
        return
    argv = [str(paxm), *(["--config", config_path] if config_path else []), "__hook-control", "--shutdown"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        click.echo(f"paxm update: warning: could not stop the hook daemon: {exc}", err=True)
        return
    if done.returncode != 0:
        click.echo(f"paxm update: warning: could not stop the hook daemon: {done.stderr.strip()[-300:]}", err=True)


@click.command("update")
@click.option("--check", is_flag=True, help="Only say whether a newer version exists (exit 100 if so, 0 if not).")
@click.option("--version", "wanted", metavar="VERSION", help="Install this version instead of the newest.")
@click.option("--pre", is_flag=True, help="Consider pre-releases (aN, bN, rcN, .devN).")
@click.option("--force", is_flag=True, help="Reinstall even when every distribution is already at the target.")
@click.option("--dry-run", is_flag=True, help="Print the commands without running them.")
@click.option(
    "--index-url", metavar="URL", help="Package index to use (passed to pip/uv; default $PIP_INDEX_URL or PyPI)."
)
@click.option("--extra-index-url", "extra_index_urls", multiple=True, metavar="URL", help="Another index (repeatable).")
@click.option("--find-links", "find_links", multiple=True, metavar="PATH|URL", help="A directory or page of wheels.")
@click.option("--no-index", is_flag=True, help="Use no index, only --find-links (passed to pip/uv).")
@json_flag()
@click.pass_context
def update(
    ctx: click.Context,
    /,
    check: bool,
    wanted: str | None,
    pre: bool,
    force: bool,
    dry_run: bool,
    index_url: str | None,
    extra_index_urls: tuple[str, ...],
    find_links: tuple[str, ...],
    no_index: bool,
    as_json: bool,
) -> None:
    """Upgrade paxm and its installed providers and integrations together, with the installer that made them.

    Detects uv tool, pipx, a uv project and pip or uv venvs; refuses (exit 3) and prints the
    command to run where it cannot tell.  Never touches config, hooks or memories.
    """
    from paxm_core.cli.update_detect import IndexOptions, detect_installation, plan_update, render_command
    from paxm_core.cli.update_index import available_versions, default_index, version_key

    installed = family_distributions()
    if "paxm" not in installed:
        raise PaxmError("paxm's distribution metadata is missing from this environment")
    index = IndexOptions(index_url, tuple(extra_index_urls), tuple(find_links), no_index)
    lookup = None if index.no_index else (index_url or default_index())
    offered = {name: available_versions(name, lookup, index.extra_index_urls, index.find_links) for name in installed}
    target = _choose_target(installed, offered, wanted, pre)
    stale = [name for name, ver in installed.items() if ver != target]
    moves = bool(stale) and (bool(wanted) or (version_key(installed["paxm"]) or ()) <= (version_key(target) or ()))
    current = installed["paxm"]
    report: JSONObject = {"installed": _rows(installed), "latest": target, "update_available": moves}
    if check:
        said = f"update available: {current} -> {target}" if moves else f"paxm {current} is up to date"
        _emit(report, as_json, [said])
        ctx.exit(EXIT_UPDATE_AVAILABLE if moves else 0)
    inst = detect_installation(Path(sys.prefix), Path(sys.base_prefix), editable=_paxm_is_editable())
    plan = plan_update(inst, list(installed), target, index, reinstall=force and not moves)
    commands = [render_command(c) for c in plan.commands]
    notes = [f"note: {n}" for n in plan.notes]
    report.update(method=inst.kind, prefix=str(inst.prefix), commands=list(commands), notes=list(plan.notes))
    report.update(refused=plan.refused or None, updated=False)
    if plan.refused:
        refusal = [f"paxm update: refusing: {plan.refused}.", "To update every paxm distribution together, run:"]
        _emit(report, as_json, refusal + [f"  {c}" for c in commands], err=True)
        ctx.exit(EXIT_REFUSED)
    if not (moves or force):
        _emit(report, as_json, [f"paxm {current} is up to date ({inst.kind})"])
    elif dry_run:
        _emit(report, as_json, [f"would update to {target} ({inst.kind}):", *(f"  {c}" for c in commands), *notes])
    else:
        after = _run_plan(plan, installed)
        _restart_hook_daemon(inst.prefix, ctx.find_root().obj.config_path)
        report.update(updated=True, installed_after=_rows(after), previous=_rows(installed))
        _emit(report, as_json, [f"{name} {installed[name]} -> {ver}" for name, ver in after.items()] + notes)


def _rows(versions: dict[str, str]) -> list[JSONValue]:
    return [{"name": name, "version": version} for name, version in versions.items()]


def _run_plan(plan: UpdatePlan, before: dict[str, str]) -> dict[str, str]:
    """Run the installer (its output goes to stderr); the versions after, each checked to be the target."""
    from paxm_core.cli.update_detect import render_command

    python = str(plan.installation.prefix / "bin" / "python")
    for command in plan.commands:
        click.echo(f"paxm update: running {render_command(command)}", err=True)
        done = subprocess.run(list(command), cwd=plan.cwd, stdout=sys.stderr, stderr=sys.stderr, check=False)
        if done.returncode != 0:
            raise PaxmError(f"the update command failed (exit {done.returncode}): {render_command(command)}")
    after = _installed_after(python)
    wrong = [f"{n} {after.get(n, 'missing')}" for n in before if after.get(n) != plan.version]
    if wrong:
        raise PaxmError(f"after the update these are not at {plan.version}: {', '.join(wrong)}")
    return {n: after[n] for n in before}


def _emit(report: JSONObject, as_json: bool, lines: list[str], *, err: bool = False) -> None:
    """The ``--json`` object, or ``lines`` of text."""
    if as_json:
        echo_json(report, ascii=True)
        return
    for line in lines:
        click.echo(line, err=err)
