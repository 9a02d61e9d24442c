"""Keys a config file holds that paxm does not read: a misspelt key changes nothing, silently.

:func:`unknown_keys` walks the parsed file against the config model and reports each such key
at its path with the known key it most likely misspells (``difflib``).  The loader prints them
as one stderr warning line; ``paxm config doctor`` lists each with its fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from paxm_core.api.provider_config import ProviderConfig
from paxm_core.api.values import value_dataclass
from paxm_core.config.codec import _hints, _join, _plan, _shape
from paxm_core.config.model import Config
from paxm_core.config.normalize import LEGACY_PROVIDER_KEYS

__all__ = ["UnknownKey", "did_you_mean", "unknown_keys"]


@value_dataclass(frozen=True)
class UnknownKey:
    """A key paxm does not read (so it changes nothing): where it is and the closest known key.

    :param path: the key's full path (``recall_profiles.default.max_result``).
    :param suggestion: the known key it most likely misspells (``max_results``), or ``""``.
    """

    path: str
    suggestion: str = ""

    def describe(self) -> str:
        """``foo`` or ``foo (did you mean `bar`?)``."""
        hint = f" (did you mean `{self.suggestion}`?)" if self.suggestion else ""
        return f"`{self.path}`{hint}"


def did_you_mean(word: str, known: Iterable[str], cutoff: float = 0.6) -> str:
    """The known word closest to ``word`` (``difflib``), or ``""`` when none is close."""
    import difflib  # only for a key paxm does not know: every load checks the keys, few have one

    close = difflib.get_close_matches(word, list(known), n=1, cutoff=cutoff)
    return close[0] if close else ""


#: a provider keeps keys it does not know for its type (``ProviderConfig.extra``); only one close
#: to a known field is flagged there, as a likely typo (``enable``, ``comand``)
_PROVIDER_TYPO_CUTOFF = 0.75


#: ``type -> the config keys that provider type declares`` (``ProviderType.config_keys``)
TypeKeys = Callable[[str], Iterable[str]]


def unknown_keys(data: object, type_keys: TypeKeys | None = None) -> list[UnknownKey]:
    """Keys in parsed config ``data`` that paxm ignores, in file order.

    Every section is checked against the config model; inside ``providers.<name>`` the keys a
    provider type may read for itself are kept, so only a likely misspelling of a known key
    (or of upstream's legacy ``read``/``write``/``required``/``weight``) is reported there.
    With ``type_keys`` (doctor passes the installed types'), a misspelling of a key the
    provider's type declares is reported too; config loading passes none, so it imports no plugin.
    """
    found: list[UnknownKey] = []
    if isinstance(data, dict):
        _walk(Config, data, "", found, type_keys)
    return found


def _walk(
    cls: type, data: dict[object, object], path: str, found: list[UnknownKey], type_keys: TypeKeys | None
) -> None:
    fields, hints = _plan(cls)[1], _hints(cls)  # the keys the decoder reads
    declared: list[str] = []
    if cls is ProviderConfig and type_keys is not None:
        declared = list(type_keys(str(data.get("type") or "")))
    for key, value in data.items():
        name = str(key)
        if name in fields:
            _walk_value(hints[name], value, _join(path, name), found, type_keys)
            continue
        if cls is ProviderConfig:
            known = [*fields, *LEGACY_PROVIDER_KEYS, *declared]
            guess = did_you_mean(name, known, _PROVIDER_TYPO_CUTOFF)
            if guess and name not in LEGACY_PROVIDER_KEYS and name not in declared:
                found.append(UnknownKey(_join(path, name), guess))
            continue
        found.append(UnknownKey(_join(path, name), did_you_mean(name, fields)))


def _walk_value(hint: object, value: object, path: str, found: list[UnknownKey], type_keys: TypeKeys | None) -> None:
    kind, inner = _shape(hint)
    if kind == "optional":
        _walk_value(inner, value, path, found, type_keys)
    elif kind == "dataclass" and isinstance(value, dict) and isinstance(inner, type):
        _walk(inner, value, path, found, type_keys)
    elif kind == "dict" and isinstance(value, dict):
        for key, item in value.items():
            _walk_value(inner, item, _join(path, str(key)), found, type_keys)
    elif kind == "list" and isinstance(value, list):
        for index, item in enumerate(value):
            _walk_value(inner, item, f"{path}[{index}]", found, type_keys)
