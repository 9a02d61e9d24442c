"""Would recall and capture work with this config?  The answers doctor gives and recall's errors use.

A config can be valid (every value well-formed) and still leave paxm nothing to do: no provider
with ``enabled: true``, an enabled provider whose ``type`` no installed plugin registers, or a
profile in use that routes to a provider that is not enabled.  Recall and capture fail on each
of these at run time; :func:`usability_problems` finds them beforehand, each with its key path
and the fix, so ``paxm config doctor`` fails exactly when they would.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from paxm_core.config.unknown_keys import did_you_mean

if TYPE_CHECKING:
    from paxm_core.config.model import Config, RouteConfig

__all__ = ["Problem", "no_provider_message", "profiles_in_use", "usability_problems"]


@dataclass(frozen=True)
class Problem:
    """One reason recall or capture would fail: the key path, what is wrong, and the fix."""

    path: str
    message: str
    fix: str


def _no_provider_cause(config: Config) -> tuple[str, str]:
    """``(why no provider is enabled, the fix)``."""
    where = str(config.path) if str(config.path) not in ("", ".") else "the config"
    names = sorted(config.providers)
    if not names:
        return (
            f"no memory provider is configured in {where}",
            "add one under `providers:` (e.g. `sqlite: {type: sqlite, enabled: true}`) or run `paxm setup`",
        )
    keys = ", ".join(f"providers.{n}" for n in names[:5]) + (" ..." if len(names) > 5 else "")
    verb = "has" if len(names) == 1 else "have"
    target = f"providers.{names[0]}" if len(names) == 1 else "each provider to use"
    return (
        f"no memory provider is enabled: {keys} {verb} no `enabled: true`",
        f"add `enabled: true` under {target} in {where}",
    )


def no_provider_message(config: Config) -> str:
    """Why no provider is enabled, and the fix (recall's error when none is)."""
    cause, fix = _no_provider_cause(config)
    return f"{cause}; {fix} (`paxm config doctor` checks the whole config)"


def profiles_in_use(config: Config, default_recall: str = "default") -> tuple[list[str], list[str]]:
    """``(recall profiles, write profiles)`` that some path uses: the CLI/MCP defaults and enabled agents' hooks.

    ``default_recall``: the profile a recall without one uses
    (``paxm_core.router.profiles.default_recall_profile``, which imports this module).
    """
    recall = [default_recall]
    write = ["default"]
    for name in sorted(config.agents):
        agent = config.agents[name]
        if not agent.enabled:
            continue
        if agent.active_recall.enabled and agent.active_recall.profile:
            recall.append(agent.active_recall.profile)
        for hook in agent.hooks.values():
            if hook.recall.enabled:
                recall.append(hook.recall.profile or "passive")
                initial = hook.recall.initial
                if initial is not None and initial.enabled and initial.profile:
                    recall.append(initial.profile)
            if hook.write.enabled and hook.write.profile:
                write.append(hook.write.profile)
    return list(dict.fromkeys(p for p in recall if p)), list(dict.fromkeys(p for p in write if p))


def usability_problems(
    config: Config, installed_types: Iterable[str] = (), default_recall: str = "default"
) -> list[Problem]:
    """Everything that makes recall or capture fail with ``config``; ``[]`` when both work.

    :param installed_types: the provider types installed plugins register (for "did you mean");
        whether a type is installed is asked of ``config.provider_types``.
    :param default_recall: see :func:`profiles_in_use`.
    """
    problems: list[Problem] = []
    enabled = config.enabled_providers()
    if not enabled:
        cause, fix = _no_provider_cause(config)
        return [Problem("providers", f"{cause}, so recall and capture fail", fix)]
    known = sorted(set(installed_types))
    for name, provider in enabled.items():
        kind = (provider.type or name).strip()
        if config.provider_types.lookup(kind) is not None:
            continue
        guess = did_you_mean(kind, known)
        hint = f" (did you mean `{guess}`?)" if guess else ""
        listed = ", ".join(known) or "none"
        problems.append(
            Problem(
                f"providers.{name}.type",
                f"providers.{name}: provider type `{kind}` is not installed{hint}, so paxm cannot start it"
                f" (installed types: {listed})",
                f"set `type: {guess}` under providers.{name}"
                if guess
                else f"install the plugin that provides `{kind}`, or set `enabled: false` under providers.{name}",
            )
        )
    recall, write = profiles_in_use(config, default_recall)
    problems += _route_problems(config, "recall_profiles", recall)
    problems += _route_problems(config, "write_profiles", write)
    return problems


def _route_problems(config: Config, section: str, names: list[str]) -> list[Problem]:
    problems: list[Problem] = []
    profiles = config.recall_profiles if section == "recall_profiles" else config.write_profiles
    enabled = config.enabled_providers()
    for name in names:
        profile = profiles.get(name)
        if profile is None:
            guess = did_you_mean(name, profiles)
            hint = f" (did you mean `{guess}`?)" if guess else ""
            problems.append(
                Problem(
                    f"{section}.{name}",
                    f"profile `{name}` is used but `{section}.{name}` is not configured{hint}",
                    f"add `{section}.{name}` or point what uses it at a configured profile",
                )
            )
            continue
        routes: list[RouteConfig] = profile.providers
        for index, route in enumerate(routes):
            if route.name.strip() in enabled:
                continue
            where = f"{section}.{name}.providers[{index}]"
            exists = route.name in config.providers
            why = "is not enabled" if exists else "is not defined"
            problems.append(
                Problem(
                    where,
                    f"{where} routes to provider `{route.name}`, which {why}, so this profile fails",
                    f"add `enabled: true` under providers.{route.name}, or remove it from {section}.{name}"
                    if exists
                    else f"define providers.{route.name}, or remove it from {section}.{name}",
                )
            )
    return problems
