"""Reading and writing the config file (YAML, or JSON for ``.json`` paths)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.api.errors import ConfigError
from paxm_core.atomic import write_atomic
from paxm_core.config.catalog import NO_PROVIDER_TYPES, ProviderCatalog
from paxm_core.config.codec import dump_config, is_secret_key, parse_config
from paxm_core.config.defaults import default_config
from paxm_core.config.model import Config
from paxm_core.config.normalize import normalize
from paxm_core.config.paths import expand_path, legacy_json_path, resolve_config_path
from paxm_core.config.validate import validate

if TYPE_CHECKING:
    import yaml

__all__ = ["config_exists", "load_config", "read_raw", "save_config"]


def _is_json(path: Path) -> bool:
    return path.suffix.lower() == ".json"


def config_exists(path: str | Path | None = None) -> bool:
    """Whether a config file (or its legacy ``config.json`` sibling) exists."""
    target = resolve_config_path(path)
    return target.is_file() or legacy_json_path(target).is_file()


#: file name of the parsed-config cache inside a ``parse_cache`` directory
PARSE_CACHE_NAME = "config-parsed.json"


#: what a config that cannot be parsed leaves open (``paxm setup`` and ``paxm uninstall`` say it too)
_WAY_OUT = (
    ", or start again with `paxm setup --yes --force` (it moves this file aside, kept);"
    " `paxm uninstall --yes` removes paxm's hooks whatever the file holds"
)


def read_raw(
    path: Path, *, parse_cache: str | Path | None = None, secret_keys: Callable[[], frozenset[str]] = frozenset
) -> object:
    """Parse the file at ``path`` into plain data; syntax errors become :class:`ConfigError`.

    :param parse_cache: a private directory where the parsed document is kept, keyed by a
        digest of the file's bytes, so a process that starts often (the hook daemon) skips
        importing and running the YAML parser while the file is unchanged.  Only a document
        that JSON gives back exactly and that holds no credential in clear is cached (a key
        such as ``api_key: env:MY_API_KEY`` is a reference, not a credential); for any other
        document the cache file is removed and the file is parsed every time.
    :param secret_keys: gives the keys installed provider types declare secret (for that check,
        made on a cache hit too: a plugin installed since may declare one of its keys secret).
    """
    if parse_cache is not None:
        return _read_cached(path, Path(parse_cache), secret_keys)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason}); save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}; check the path and its permissions") from None
    if not text.strip():
        # An empty file would silently mean "built-in defaults, no agent enabled": every hook
        # would exit 0 and capture nothing.  Say so instead.
        raise ConfigError(
            f"{path}: the config file is empty, so no agent is enabled and hooks capture nothing; "
            "run `paxm setup` (or delete the file to use the built-in defaults)"
        )
    if _is_json(path):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; fix the syntax{_WAY_OUT}"
            ) from None
        except RecursionError:
            raise ConfigError(f"{path}: invalid JSON: nested too deeply; simplify the file") from None
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        hint = (
            "fix that value"
            if isinstance(exc, yaml.constructor.ConstructorError)
            else "fix the syntax (indent with spaces)"
        )
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}; {hint}{_WAY_OUT}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid YAML: nested too deeply; simplify the file") from None


def _read_cached(path: Path, cache_dir: Path, secret_keys: Callable[[], frozenset[str]]) -> object:
    import _blake2  # the C module: hashlib would load OpenSSL for one digest

    try:
        raw = path.read_bytes()
    except OSError:
        return read_raw(path)  # the uncached path words the error
    digest = _blake2.blake2b(raw, digest_size=20).hexdigest()
    cache = cache_dir / PARSE_CACHE_NAME
    data: object = None
    hit = False
    try:
        stored = json.loads(cache.read_text(encoding="utf-8"))
        if isinstance(stored, dict) and stored.get("digest") == digest and "data" in stored:
            data, hit = stored["data"], True
    except (OSError, ValueError):
        pass
    declared = secret_keys()
    if not hit:
        data = read_raw(path)
    # checked on a hit too: a plugin installed since may declare one of its keys secret
    if _holds_clear_secret(data, declared):
        # Credentials never go to a second file: it would outlive a key rotation and be one
        # more place to leak from.  Such a config pays the YAML parser on each daemon start.
        try:
            cache.unlink()
        except OSError:  # absent (the usual case), or not ours to remove
            pass
        return data
    if hit:
        return data
    try:
        text = json.dumps({"digest": digest, "data": data}, ensure_ascii=False)
        back = json.loads(text)["data"]
        if back == data and _same_types(back, data):
            from paxm_core.private_files import private_dir

            private_dir(cache_dir)
            write_atomic(cache, text, durable=False)
    except (TypeError, ValueError, OSError, RecursionError):  # not JSON-exact, or unwritable: no cache
        pass
    return data


def _holds_clear_secret(data: object, declared: frozenset[str]) -> bool:
    """Whether a mapping anywhere in ``data`` gives a credential-named key a literal value.

    Empty values and ``env:NAME`` / ``${NAME}`` references are not credentials.  Names follow
    :func:`~paxm_core.config.codec.is_secret_key` with the ``declared`` secret keys.
    """
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, (dict, list)):
                    stack.append(value)
                elif (
                    isinstance(key, str)
                    and not isinstance(value, bool)
                    and value is not None
                    and is_secret_key(key, declared)
                ):
                    text = str(value).strip()
                    if text and not text.startswith("env:") and not (text.startswith("${") and text.endswith("}")):
                        return True
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _same_types(a: object, b: object) -> bool:
    """``a == b`` also holds for ``1 == 1.0 == True``: the cache must give back the same types."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict) and isinstance(b, dict):  # b: the same type as a
        return all(_same_types(k, k2) and _same_types(a[k], b[k2]) for k, k2 in zip(a, b, strict=True))
    if isinstance(a, list) and isinstance(b, list):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return True


@functools.cache
def _yaml_loader() -> type[yaml.SafeLoader]:
    """A SafeLoader that reads scalars the way upstream's YAML library does.

    PyYAML follows YAML 1.1, where ``no``/``on``/``yes`` are booleans and unquoted timestamps
    become datetimes.  Upstream (Go, yaml.v3) keeps those as strings, so ``user_id: no`` or an
    unquoted ``passive_write_started_at`` would otherwise load differently here.
    """
    import re

    import yaml

    # The libyaml parser when available: 10x faster, and hook processes load the config per prompt.
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        # Aliases share one node: composing is cheap, but anything that walks the result
        # (``config show --json``, normalising, copying) pays the expanded size, which an
        # "alias bomb" makes exponential.  Count the expanded size on the node graph before
        # constructing anything, and refuse a document beyond a generous budget.
        def construct_document(self, node: yaml.Node) -> object:
            _check_expansion(node)
            return super().construct_document(node)

        # Duplicate keys are an error, as in upstream's YAML library (yaml.v3): PyYAML
        # would silently keep the last one.
        def construct_mapping(self, node: yaml.Node, deep: bool = False) -> object:
            if isinstance(node, yaml.MappingNode):
                seen: dict[object, yaml.Mark] = {}
                for key_node, _ in node.value:
                    if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = key_node.value
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"duplicate key {key!r} (first at line {seen[key].line + 1})",
                            key_node.start_mark,
                        )
                    seen[key] = key_node.start_mark
            return super().construct_mapping(node, deep=deep)

    dropped = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp"}
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in dropped]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return Loader


# A config is a few hundred nodes; a million leaves room for any honest use of anchors.
MAX_EXPANDED_NODES = 1_000_000


def _check_expansion(root: yaml.Node) -> None:
    """Raise a YAML error at the node whose alias expansion exceeds :data:`MAX_EXPANDED_NODES`.

    Sizes are memoised per node (aliases are the same node object), so this is linear in the
    size of the document as written; a recursive alias is refused too.
    """
    import yaml

    sizes: dict[int, int] = {}
    active: set[int] = set()
    # iterative post-order walk: a deep document must not hit the recursion limit
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            children = _children(node)
            total = 1 + sum(sizes[id(child)] for child in children)
            if total > MAX_EXPANDED_NODES:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"aliases expand this value to more than {MAX_EXPANDED_NODES} nodes (an alias bomb?); "
                    "remove the aliases",
                    node.start_mark,
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in active:
            raise yaml.constructor.ConstructorError(
                None, None, "recursive alias (a value contains itself)", node.start_mark
            )
        active.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) not in sizes:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_config(
    path: str | Path | None = None,
    *,
    provider_types: ProviderCatalog = NO_PROVIDER_TYPES,
    parse_cache: str | Path | None = None,
) -> Config:
    """Load, validate and normalize the config.

    ``path`` is resolved like ``--config`` (then ``$PAXM_CONFIG``, then XDG).  A missing file
    gives the built-in defaults (SQLite under the XDG data dir), so paxm works with no setup.
    Invalid files raise :class:`ConfigError` naming the file, the key path and the fix.
    ``provider_types``: the installed provider types (their defaults, checks and secret keys),
    from the caller that loaded the plugins (``paxm_core.plugins.installed_provider_catalog()``);
    the returned config keeps it for saving and redacting.
    ``parse_cache``: see :func:`read_raw` (validation and normalizing still run every time).
    """
    target = resolve_config_path(path)
    source = target
    if target.exists() and not target.is_file():
        raise ConfigError(f"{target}: is not a file; point --config or PAXM_CONFIG at a YAML file")
    if not source.is_file():
        legacy = legacy_json_path(target)
        if legacy != target and legacy.is_file():
            source = legacy
        else:
            config = normalize(default_config(target, provider_types), in_place=True)
            config.path = target
            return config
    data = read_raw(source, parse_cache=parse_cache, secret_keys=provider_types.secret_keys)
    try:
        config = parse_config(data)
        config.path = target
        config.provider_types = provider_types
        validate(config)
        config = normalize(config, in_place=True)  # freshly parsed: nobody else holds it
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    _warn_unknown_keys(source, data)
    config.exists = True
    return config


#: config files this process already warned about (a daemon or a test loads one many times)
_WARNED: set[str] = set()


def _warn_unknown_keys(source: Path, data: object) -> None:
    """One line on stderr naming the keys paxm ignores in ``source`` (once per file and process).

    A misspelt key changes nothing, silently; the warning makes that visible on every command
    without ever failing one (``paxm config doctor`` lists each key with its fix).
    """
    if str(source) in _WARNED:
        return
    try:
        from paxm_core.config.unknown_keys import unknown_keys

        found = unknown_keys(data)
    except Exception:  # a warning must never break loading
        return
    if not found:
        return
    _WARNED.add(str(source))
    shown = ", ".join(k.describe() for k in found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    try:
        sys.stderr.write(
            f"paxm: warning: {source}: unknown config key(s) {shown}: paxm ignores them"
            " (`paxm config doctor` lists each with its fix)\n"
        )
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # no usable stderr (closed, or None under pythonw)
        pass


def save_config(config: Config, path: str | Path | None = None) -> Path:
    """Validate ``config`` and write it atomically with mode 0600; return the path written.

    An invalid config raises :class:`ConfigError` and leaves any existing file untouched.
    ``path`` defaults to ``config.path`` (or the resolved default location).
    """
    target = (
        expand_path(path) if path else (config.path if str(config.path) not in ("", ".") else resolve_config_path())
    )
    try:
        validate(config)
    except ConfigError as exc:
        raise ConfigError(f"{target}: {exc}") from None
    normalized = normalize(config)
    data = dump_config(normalized, redact=False)
    if _is_json(target):
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        import yaml

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, indent=2)
    if target.exists() and not target.is_file():
        raise ConfigError(f"{target}: is not a file; choose a file path for the config")
    try:
        from paxm_core.private_files import private_dir

        private_dir(target.parent)
        write_atomic(target, text)
    except OSError as exc:
        raise ConfigError(
            f"{target}: cannot write the config: {exc.strerror or exc}; check the directory permissions"
        ) from None
    config.path = target
    config.exists = True
    return target
