"""Doctor check ``file_modes``: everything paxm keeps is private to its user.

paxm creates its files 0600 and directories 0700, but a copy, a restore, a dotfiles manager or
a hand edit can widen them.  Any group/other bit is an ``error`` with the ``chmod`` that fixes
it (a config file without literal credentials, and a config directory others can only read
while it holds none: a warning).  Also errors: a directory paxm writes in that another user can
change, and a file paxm keeps that is a link (the config file excepted), not a regular file, or
another user's.  paxm never chmods an existing file itself; directories that are not paxm's
(a ``--config`` in a project folder) are not judged.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.doctor import DoctorFinding, Level

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = ["check_file_modes", "private_paths"]


def _with_sidecars(path: Path) -> list[Path]:
    return [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]


def private_paths(config: Config) -> tuple[list[Path], list[Path]]:
    """``(directories, files)`` doctor holds to 0700 / 0600; directories' entries are files to check too."""
    from paxm_core.config.paths import default_data_path, is_default_config_path, legacy_json_path
    from paxm_core.runtime import session_sequence_path
    from paxm_core.telemetry.settings import TelemetrySettings

    default = is_default_config_path(config.path)
    state_dir = TelemetrySettings.from_config(config).dir
    dirs: list[Path] = [config.hooks_dir, state_dir, session_sequence_path(config).parent]
    files: list[Path] = [config.path]
    legacy = legacy_json_path(config.path)
    if legacy != config.path:
        files.append(legacy)
    if default:
        dirs.append(config.config_dir)
        dirs.append(default_data_path().parent)
        files.extend(_with_sidecars(default_data_path()))
    files.extend(_with_sidecars(config.capture_queue_path))
    files.extend(_with_sidecars(session_sequence_path(config)))
    for database in _path_keys(config):
        files.extend(_with_sidecars(database))
    return list(dict.fromkeys(d.absolute() for d in dirs)), list(dict.fromkeys(f.absolute() for f in files))


def _entries(directory: Path) -> list[Path]:
    try:
        return sorted(directory / name for name in os.listdir(directory))
    except OSError:
        return []


def _error(path: Path, message: str, fix: str, level: Level = "error") -> DoctorFinding:
    return DoctorFinding("file_modes", str(path), level, message, fix)


def _finding(path: Path, mode: int, directory: bool) -> DoctorFinding:
    want = "0700" if directory else "0600"
    kind, kinds = ("directory", "directories") if directory else ("file", "files")
    message = f"{kind} {path} is {mode:04o}: group or others can access it (paxm keeps its {kinds} {want})"
    return _error(path, message, f"chmod {want[1:]} {shlex.quote(str(path))}")


def literal_secrets(config: Config) -> list[str]:
    """Key paths (``providers.zep.api_key``) whose credential is written in the file, not an ``env:`` reference."""
    from paxm_core.plugins import is_secret_option

    found: list[str] = []
    for name, provider in config.providers.items():
        values: dict[str, object] = {"api_key": provider.api_key, **provider.extra}
        values.update({f"env.{k}": v for k, v in provider.env.items()})
        for key, value in values.items():
            text = value.strip() if isinstance(value, str) else ""
            reference = text.startswith("env:") or (text.startswith("${") and text.endswith("}"))
            if text and not reference and is_secret_option(key.removeprefix("env.")):
                found.append(f"providers.{name}.{key}")
    return found


def _config_finding(config: Config, path: Path, mode: int) -> DoctorFinding:
    """A readable config file is an error when credentials are written in it, else a warning."""
    secrets = literal_secrets(config)
    fix = f"chmod 600 {shlex.quote(str(path))}"
    if not secrets:
        readable = (
            f"config file {path} is {mode:04o}: others can read it (no credentials in it now; setup may add some)"
        )
        return _error(path, readable, fix, "warn")
    shown = ", ".join(secrets[:3]) + (" ..." if len(secrets) > 3 else "")
    return _error(
        path, f"config file {path} is {mode:04o} and holds credentials ({shown}): group or others can read them", fix
    )


def check_file_modes(config: Config) -> Iterator[DoctorFinding]:
    """One finding per paxm file or directory that is unsafe or has group/other permission bits.

    Silent when all are private (not an ``ok`` row: ``--json`` on a sound default install
    stays upstream's shape).
    """
    dirs, files = private_paths(config)
    untrusted = set()
    for directory in dict.fromkeys([*dirs, *(f.parent for f in files)]):
        finding = _untrusted_finding(directory, mine=directory in dirs)
        if finding is not None:
            untrusted.add(directory)
            yield finding
    # a link among a directory's entries is one paxm would refuse too (a socket there is paxm's)
    links = [e for d in dirs if d.is_dir() for e in _entries(d) if e.is_symlink()]
    refused: set[Path] = set()
    for path, finding in _unsafe_files(config, list(dict.fromkeys([*files, *links]))):
        refused.add(path)
        yield finding
    yield from _mode_findings(config, dirs, files, skip=untrusted | refused)


def _untrusted_finding(directory: Path, *, mine: bool) -> DoctorFinding | None:
    """An error when another user can change ``directory`` (paxm refuses to write in it)."""
    from paxm_core.private_files import untrusted_dir_reason

    try:
        reason = untrusted_dir_reason(directory)
    except OSError:
        return None  # missing: paxm creates it 0700 when it first writes there
    if not reason:
        return None
    quoted = shlex.quote(str(directory))
    if "owned by" in reason:
        fix = f"chown {_user_name()} {quoted}"
    else:
        fix = f"chmod 700 {quoted}" if mine else f"chmod go-w {quoted}"
    message = f"directory {directory} {reason}: another user could swap the files paxm keeps there, so paxm"
    return _error(directory, message + " does not write in it", fix)


def _user_name() -> str:
    import pwd

    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _unsafe_files(config: Config, files: list[Path]) -> Iterator[tuple[Path, DoctorFinding]]:
    """Files paxm keeps that it refuses to open: links, non-files, other users' files."""
    from paxm_core.private_files import unsafe_file_reason

    keys = _path_keys(config)
    config_files = {config.path.absolute(), *(f for f in files if f.name == "config.json")}
    for path in files:
        try:
            info = path.lstat()
        except OSError:
            continue
        if path in config_files and stat.S_ISLNK(info.st_mode):
            continue  # a dotfiles link: read through it, replaced whole on save
        reason = unsafe_file_reason(info, "file paxm can use")
        if not reason:
            continue
        quoted = shlex.quote(str(path))
        if stat.S_ISLNK(info.st_mode):
            reason = f"is a symbolic link to {os.readlink(path)}; paxm does not follow links where it keeps its files"
            fix = f"rm {quoted}"  # the link only: what it points at stays
        elif "owned by" in reason:
            fix = f"chown {_user_name()} {quoted}"
        else:
            key = keys.get(path)
            fix = f"paxm setup (set {key} to a file path)" if key else f"move {quoted} away"
        where = f"{keys[path]}: " if path in keys else ""
        yield path, _error(path, f"{where}{path} {reason}", fix)


def _path_keys(config: Config) -> dict[Path, str]:
    """``{database file: "providers.NAME.path"}`` for every enabled provider with a ``path``."""
    keys: dict[Path, str] = {}
    for name, provider in config.enabled_providers().items():
        raw = (getattr(provider, "path", "") or "").strip()
        if raw:
            keys[Path(raw).expanduser().absolute()] = f"providers.{name}.path"
    return keys


def _mode_findings(config: Config, dirs: list[Path], files: list[Path], *, skip: set[Path]) -> Iterator[DoctorFinding]:
    """Group/other permission bits on paxm's directories, their entries, and its files."""
    seen: set[Path] = set(skip)
    targets: list[tuple[Path, bool | None]] = [(d, True) for d in dirs]
    for directory in dirs:
        if directory.is_dir():
            targets.extend((entry, None) for entry in _entries(directory))
    targets.extend((f, False) for f in files)
    for path, expect_dir in targets:
        if path in seen:
            continue
        seen.add(path)
        try:
            # A symlinked config or directory (dotfiles) is judged by what it points at; any
            # other link is reported above, and its target's mode is not paxm's business: a
            # ``chmod`` fix would change the target.
            info = path.stat() if expect_dir or path == config.path.absolute() else path.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            continue
        is_dir = stat.S_ISDIR(info.st_mode)
        if expect_dir is True and not is_dir:
            continue
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            if path == config.path.absolute():
                yield _config_finding(config, path, mode)
            elif is_dir and path == config.path.absolute().parent and not mode & 0o022 and not literal_secrets(config):
                # upstream's documented set-up leaves a 0755 config directory: readable, but nothing
                # secret in it and nobody else can change it, so a warning, not a broken install
                yield dataclasses.replace(_finding(path, mode, is_dir), level="warn")
            else:
                yield _finding(path, mode, is_dir)
