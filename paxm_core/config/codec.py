"""Plain data (parsed YAML/JSON) <-> config dataclasses.

Decoding is driven by the dataclasses' type hints, so every type error names the key path
(``recall_profiles.passive.providers[0].timeout``) and what to write instead.  Unknown keys
are ignored, except inside a provider, where they are kept in ``ProviderConfig.extra`` for
third-party provider types.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from paxm_core.api.errors import ConfigError
from paxm_core.api.provider_config import SECRET_KEYS, ProviderConfig
from paxm_core.config.model import Config
from paxm_core.duration import format_duration, parse_duration

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["REDACTED", "compact_duration", "decode", "dump_config", "dump_value", "is_secret_key", "parse_config"]

REDACTED = "<redacted>"

T = TypeVar("T")

# ProviderConfig belongs to the provider contract; its field metadata is recorded here.
_PROVIDER_FLAGS = {"always": frozenset({"type", "enabled"}), "duration": frozenset({"timeout"})}
_SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "apikey")
_SECRET_WORDS = ("password", "secret", "token", "authorization", "credential")


_BOOL_WORDS = {"true": True, "yes": True, "y": True, "on": True, "false": False, "no": False, "n": False, "off": False}


def is_secret_key(key: str, declared: frozenset[str] = frozenset()) -> bool:
    """Whether a provider option named ``key`` holds a credential and must never be shown.

    :data:`SECRET_KEYS`, names that look like credentials, and ``declared``: the keys installed
    provider types declare ``secret`` (:attr:`ProviderCatalog.secret_keys`, lower case).
    """
    k = key.lower().replace("-", "_")
    return k in SECRET_KEYS or k.endswith(_SECRET_SUFFIXES) or any(w in k for w in _SECRET_WORDS) or k in declared


@functools.cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _is_optional(tp: object) -> bool:
    return typing.get_origin(tp) in (types.UnionType, typing.Union)


def _flag(cls: type, f: dataclasses.Field[object], flag: str) -> bool:
    """Whether field ``f`` carries the model metadata ``flag`` (``duration`` or ``always``)."""
    if cls is ProviderConfig:
        return f.name in _PROVIDER_FLAGS[flag]
    return bool(f.metadata.get(flag))


#: how an error names a value's kind (a bool before a number: ``True`` is an ``int`` too)
_KINDS = ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "a list"), (dict, "a mapping"))
#: what a scalar field that is present but null (``key:``) decodes to
_ZEROS: dict[object, object] = {bool: False, int: 0, float: 0.0, str: ""}


def _describe(value: object) -> str:
    if value is None:
        return "null"
    return next((name for kinds, name in _KINDS if isinstance(value, kinds)), type(value).__name__)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# --------------------------------------------------------------------------- decoding


@functools.cache
def _shape(tp: object) -> tuple[str, object]:
    """Classify a type hint: (kind, argument)."""
    args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if _is_optional(tp):
        return "optional", next(a for a in args if a is not type(None))
    if tp is Any:
        return "any", None
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return "dataclass", tp
    if origin is list:
        return "list", args[0]
    if origin is dict:
        return "dict", args[1]
    return "scalar", tp


def decode(tp: type[T], value: object, path: str) -> T:
    """Convert plain data ``value`` to ``tp`` (a config dataclass or a scalar type); raise
    :class:`ConfigError` naming ``path``."""
    result = _decode_hint(tp, value, path)
    if not isinstance(result, tp):  # pragma: no cover - a hint the codec does not know
        raise TypeError(f"decoding {path} gave {type(result).__name__}, not {tp.__name__}")
    return result


def _decode_hint(tp: object, value: object, path: str) -> object:
    """Convert plain data ``value`` to type hint ``tp``; raise :class:`ConfigError` naming ``path``."""
    kind, arg = _shape(tp)
    if kind == "optional":
        return None if value is None else _decode_hint(arg, value, path)
    if kind == "any":
        return value
    if kind == "dataclass" and isinstance(arg, type):
        return _decode_dataclass(arg, value, path)
    if kind == "list":
        if value is None:
            return []
        if not isinstance(value, list):
            raise ConfigError(f"expected a list, got {_describe(value)}; write it as a YAML list", path=path)
        return [_decode_hint(arg, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind == "dict":
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ConfigError(f"expected a mapping, got {_describe(value)}; write it as `key: value` lines", path=path)
        out: dict[str, object] = {}
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise ConfigError(f"key {k!r} must be a string; quote it", path=path)
            out[str(k)] = _decode_hint(arg, v, _join(path, str(k)))
        return out
    return _decode_scalar(arg, value, path)


def _decode_scalar(tp: object, value: object, path: str) -> object:
    if value is None and tp in _ZEROS:
        return _ZEROS[tp]
    if tp is bool:
        if isinstance(value, bool):
            return value
        # yaml.v3 still reads YAML 1.1 spellings into boolean fields; so do we.
        if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
            return _BOOL_WORDS[value.strip().lower()]
        raise ConfigError(f"expected true or false, got {_describe(value)} {value!r}", path=path)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(f"expected a whole number, got {_describe(value)} {value!r}", path=path)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            result = float(value)
            if not math.isfinite(result):
                raise ConfigError(f"expected a finite number, got {value!r}", path=path)
            return result
        raise ConfigError(f"expected a number, got {_describe(value)} {value!r}", path=path)
    if tp is str:
        if isinstance(value, str):
            return value
        # YAML turns `user_id: 1234` into an int; accept scalars where a string is meant.
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"expected a string, got {_describe(value)}; quote the value", path=path)
    raise TypeError(f"unsupported config type {tp!r}")  # pragma: no cover - model bug


def _decode_duration(value: object, path: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f'expected a duration like "250ms" or "30s", got {_describe(value)}', path=path)
    try:
        seconds = parse_duration(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds):
        raise ConfigError(f'{value!r} is not a duration; write it like "250ms", "30s" or "24h"', path=path)
    return seconds


@functools.cache
def _plan(cls: type) -> tuple[list[tuple[str, bool, object]], frozenset[str]]:
    """Per dataclass: the decodable fields as (name, is_duration, hint) and their names."""
    hints = _hints(cls)
    fields = [
        (f.name, _flag(cls, f, "duration"), hints[f.name])
        for f in dataclasses.fields(cls)
        if not f.metadata.get("internal") and not (cls is ProviderConfig and f.name == "extra")
    ]
    return fields, frozenset(name for name, _, _ in fields)


def _decode_dataclass(cls: type[T], value: object, path: str) -> T:
    if value is None:
        return cls()
    if not isinstance(value, dict):
        where = path or "config"
        raise ConfigError(f"expected a mapping, got {_describe(value)}; write it as `key: value` lines", path=where)
    plain: type = cls  # what ``functools.cache`` can key on
    fields, known = _plan(plain)
    kwargs: dict[str, object] = {}
    for name, is_duration, hint in fields:
        if name not in value:
            continue
        raw = value[name]
        sub = f"{path}.{name}" if path else name
        kwargs[name] = _decode_duration(raw, sub) if is_duration else _decode_hint(hint, raw, sub)
    if cls is ProviderConfig:
        kwargs["extra"] = {str(k): v for k, v in value.items() if str(k) not in known}
    return cls(**kwargs)


def parse_config(data: object) -> Config:
    """Build a :class:`Config` from parsed YAML/JSON (``None`` too); type errors raise :class:`ConfigError`."""
    return _decode_dataclass(Config, data, "")


# --------------------------------------------------------------------------- encoding


def compact_duration(seconds: float) -> str:
    """Spell ``seconds`` the way people write durations in config (``"24h"``, ``"1m30s"``, ``"250ms"``)."""
    millis = round(seconds * 1000)
    if millis <= 0 or abs(millis - seconds * 1000) > 1e-6:
        return format_duration(seconds)
    parts: list[str] = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, millis = divmod(millis, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def _zero(value: object) -> object:
    return type(value)()


def _is_empty(value: object) -> bool:
    if value is None or value is False:
        return True
    if isinstance(value, (str, list, dict)):
        return not value
    if isinstance(value, (int, float)):
        return value == 0
    return False


def dump_value(value: object, redact: frozenset[str] | None = frozenset()) -> object:
    """One config section (a dataclass) as plain YAML-shaped data.

    ``redact``: ``None`` writes secrets as they are; a set redacts them, counting the keys
    installed provider types declare secret too (see :func:`is_secret_key`).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dump_dataclass(value, redact)
    if isinstance(value, dict):
        return {k: dump_value(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [dump_value(v, redact) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value) if abs(value) < 2**53 else value
    return value


#: compiled on first use (``re`` caches it): most commands never redact a command line
_SECRET_FLAG = r"(?i)^(--?[\w.-]*(?:key|token|secret|password|auth)[\w.-]*)(=.*)?$"


def _redact_option(key: str, value: object, declared: frozenset[str]) -> object:
    """Redact a provider option: secret-looking keys, and the same inside nested mappings."""
    if is_secret_key(key, declared) and value not in (None, ""):
        return REDACTED
    if isinstance(value, dict):
        return {k: _redact_option(str(k), v, declared) for k, v in value.items()}
    if isinstance(value, str) and "://" in value:
        return _redact_url(value)
    return value


def _redact_args(args: list[object]) -> list[object]:
    """Hide values of ``--api-key X`` / ``--token=X`` style arguments."""
    out: list[object] = []
    hide_next = False
    for arg in args:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        match = re.match(_SECRET_FLAG, arg) if isinstance(arg, str) else None
        if match and match.group(2):
            out.append(f"{match.group(1)}={REDACTED}")
        else:
            out.append(arg)
            hide_next = match is not None
    return out


def _redact_url(url: str) -> str:
    """Hide the password of ``scheme://user:password@host`` URLs."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    netloc = parts.netloc.replace(f":{password}@", f":{REDACTED}@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _dump_dataclass(obj: DataclassInstance, redact: frozenset[str] | None) -> dict[str, object]:
    cls = type(obj)
    out: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        value = getattr(obj, f.name)
        if cls is ProviderConfig and f.name == "extra":
            for k, v in value.items():
                if k in out:
                    continue
                out[k] = _redact_option(k, v, redact) if redact is not None else v
            continue
        if _flag(cls, f, "duration"):
            if value is not None:
                out[f.name] = compact_duration(value)
            continue
        if value is None:
            continue
        optional = _is_optional(_hints(cls)[f.name])
        if dataclasses.is_dataclass(value) and not optional and value == _zero(value):
            continue  # a section left at its zero value is omitted, as upstream's omitempty does
        dumped = dump_value(value, redact)
        # Optional values (``bool | None`` ...) keep an explicit false/zero once set.
        if not optional and not _flag(cls, f, "always") and _is_empty(dumped):
            continue
        if cls is ProviderConfig and redact is not None:
            if f.name == "env" and isinstance(dumped, dict):
                dumped = {k: REDACTED for k in dumped}
            elif f.name == "args" and isinstance(dumped, list):
                dumped = _redact_args(dumped)
            elif f.name == "base_url" and isinstance(dumped, str):
                dumped = _redact_url(dumped)
            else:
                dumped = _redact_option(f.name, dumped, redact)
        out[f.name] = dumped
    return out


def dump_config(config: Config, *, redact: bool = True) -> dict[str, object]:
    """Upstream-shaped plain data for ``config`` (what ``config show`` prints and ``save_config`` writes).

    Redaction counts the keys ``config.provider_types`` declares secret too.
    """
    return _dump_dataclass(config, config.provider_types.secret_keys() if redact else None)
