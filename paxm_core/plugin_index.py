"""A per-environment cache of the ``paxm`` entry points and of what each plugin registers.

Finding the entry points reads every installed distribution's metadata, and loading them all
imports every harness integration and provider, though a process needs the integration its
harness uses and the providers its config names.  With this index,
:func:`paxm_core.plugins.get_plugin_manager` skips the scan and (``lazy=True``) defers plugins
that only register integrations, or only provider types.

The index is only trusted while its *stamp* matches: the interpreter, ``sys.path``, the mtime
of every ``sys.path`` directory (installing or removing a distribution adds or removes a
``.dist-info`` entry there), and the mtime and size of each paxm distribution's
``entry_points.txt``.  What a plugin registers (its *roles*) is trusted while its module file
keeps its mtime and size, so an edited editable install is loaded fully once and re-indexed.
Anything unreadable or stale means "scan and load everything", exactly as without the index.

The file lives in ``$XDG_CACHE_HOME/paxm/`` (default ``~/.cache/paxm/``), 0600 in a 0700
directory; writing it is best effort.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import field

from paxm_core.api.json import JSONValue
from paxm_core.api.values import value_dataclass

__all__ = ["EntryPointRecord", "PluginIndex", "index_path", "load_index", "record_roles", "scan", "write_index"]

#: bump when the file's layout changes
FORMAT = 3


@value_dataclass
class EntryPointRecord:
    """One ``paxm`` entry point, as the index stores it.

    :param name: the entry point's name (the plugin name).
    :param value: ``module`` or ``module:attr``.
    :param distribution: the distribution's name; ``version`` its version.
    :param metadata: the distribution's ``entry_points.txt`` (part of the stamp).
    :param providers: provider types it registered when last loaded (``None``: not known).
    :param integrations: integration names and aliases (lower case) it registered.
    :param canonical: the canonical names among them (a name beats another integration's alias).
    :param secret_keys: the config keys its provider types declare secret (lower case), so
        redaction knows them while the plugin stays unimported.
    :param module_file: the plugin module's file and its ``(mtime_ns, size)`` when indexed.
    """

    name: str
    value: str
    distribution: str = ""
    version: str = ""
    metadata: str = ""
    providers: list[str] | None = None
    integrations: list[str] = field(default_factory=list)
    canonical: list[str] = field(default_factory=list)
    module_file: str = ""
    module_stamp: list[int] = field(default_factory=list)
    secret_keys: list[str] = field(default_factory=list)

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def load(self) -> object:
        """Import the plugin object (what ``EntryPoint.load`` does)."""
        import importlib

        module, _, attrs = self.value.partition(":")
        obj: object = importlib.import_module(module.strip())
        for attr in filter(None, attrs.strip().split(".")):
            obj = getattr(obj, attr)
        return obj

    def roles_known(self) -> bool:
        """Whether :attr:`providers`/:attr:`integrations` still describe the plugin's module."""
        if self.providers is None or not self.module_file:
            return False
        return _file_stamp(self.module_file) == self.module_stamp


@value_dataclass
class PluginIndex:
    """The entry points of one environment (sorted by name) under the stamp they were read with."""

    stamp: list[JSONValue]
    entries: list[EntryPointRecord]


def _file_stamp(path: str) -> list[int]:
    try:
        st = os.stat(path)
    except OSError:
        return []
    return [st.st_mtime_ns, st.st_size]


def _environment_stamp(metadata_files: list[str]) -> list[JSONValue]:
    # "" (the working directory of ``python -c``) changes with every file written there
    dirs: list[JSONValue] = [[entry, *_file_stamp(entry)] for entry in sys.path if entry]
    files: list[JSONValue] = [[path, *_file_stamp(path)] for path in metadata_files]
    return [FORMAT, sys.executable, dirs, files]


def index_path() -> str:
    """Where the index of this interpreter and ``sys.path`` is kept."""
    import zlib

    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    key = zlib.crc32(repr((sys.executable, sys.path)).encode("utf-8", "replace"))
    return os.path.join(base, "paxm", f"plugins-{key:08x}.json")


def load_index() -> PluginIndex | None:
    """The cached index when its stamp still matches this environment, else ``None``."""
    try:
        with open(index_path(), encoding="utf-8") as handle:
            data = json.load(handle)
        entries = [EntryPointRecord(**item) for item in data["entries"]]
        stamp = data["stamp"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if stamp != _environment_stamp([e.metadata for e in entries if e.metadata]):
        return None
    return PluginIndex(stamp, entries)


def scan(group: str) -> PluginIndex:
    """Read the entry points of ``group`` from the installed distributions (no roles yet)."""
    from importlib.metadata import entry_points

    entries: list[EntryPointRecord] = []
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        name = version = metadata = ""
        if dist is not None:
            try:
                name, version = str(dist.metadata["Name"] or ""), str(dist.version or "")
            except Exception:  # unreadable metadata: reported without a distribution
                pass
            located = getattr(dist, "_path", None)  # PathDistribution: the .dist-info directory
            if located is not None:
                metadata = os.path.join(os.fspath(located), "entry_points.txt")
        entries.append(EntryPointRecord(ep.name, ep.value, name, version, metadata))
    return PluginIndex(_environment_stamp([e.metadata for e in entries if e.metadata]), entries)


def write_index(index: PluginIndex) -> None:
    """Store ``index`` (0600 file in a 0700 directory); never raises."""
    from dataclasses import asdict

    try:
        from paxm_core.atomic import write_atomic
        from paxm_core.private_files import private_dir

        path = index_path()
        private_dir(os.path.dirname(path))
        payload = {"stamp": index.stamp, "entries": [asdict(e) for e in index.entries]}
        write_atomic(path, json.dumps(payload, sort_keys=True), mode=0o600, durable=False)
    except Exception:  # a cache: a read-only or full home directory only costs a scan
        pass


def record_roles(
    entry: EntryPointRecord,
    providers: list[str],
    integrations: list[str],
    canonical: Iterable[str] = (),
    secret_keys: Iterable[str] = (),
) -> None:
    """Note what ``entry``'s plugin registered, stamped with its module file.

    :param canonical: the integrations' own names (``integrations`` also holds their aliases).
    :param secret_keys: the config keys its provider types declare secret.
    """
    module = sys.modules.get(entry.module)
    path = getattr(module, "__file__", None) or ""
    entry.providers = sorted(providers)
    entry.integrations = sorted({name.lower() for name in integrations})
    entry.canonical = sorted({name.lower() for name in canonical})
    entry.secret_keys = sorted({name.lower() for name in secret_keys})
    entry.module_file = path
    entry.module_stamp = _file_stamp(path) if path else []
