"""The questions of ``paxm setup``: providers, their settings, agents; answers land in a config.

Everything here works from what plugins declare: a provider type's ``config_keys`` (``ask``,
``secret``, ``default``, ``choices``, ``required``) and ``setup_priority``; an integration's
``detect()``, ``display_name`` and ``setup_priority``.  Nothing is saved here: the caller
applies the result with :func:`~paxm_core.config.setup.apply_setup`, shows a summary, asks for
confirmation and only then saves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from paxm_core.api.protocols import ConfigKey, ProviderType
from paxm_core.api.provider_config import ProviderConfig
from paxm_core.cli.prompts import Option, Prompter
from paxm_core.config.model import Config
from paxm_core.config.setup import (
    SetupCatalog,
    SetupOptions,
    instance_name_for_type,
    provider_config_from_type,
)

__all__ = ["SetupAnswers", "ask_setup", "summary_lines"]


@dataclass
class SetupAnswers:
    """What the person chose (the provider values were written into the config already)."""

    providers: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)


def set_provider_key(provider: ProviderConfig, key: ConfigKey, text: str) -> None:
    """Store answer ``text`` for ``key`` on ``provider``, converted to the key's ``kind``.

    Raises :class:`ValueError` with a sentence when ``text`` is not a value of that kind.
    """
    from paxm_core.duration import parse_duration

    value: object
    raw = text.strip()
    if key.kind == "int":
        value = int(raw) if raw else 0
    elif key.kind == "float":
        value = float(raw) if raw else 0.0
    elif key.kind == "bool":
        if raw.lower() not in ("true", "false", "yes", "no", "1", "0", ""):
            raise ValueError(f"{key.name} must be true or false")
        value = raw.lower() in ("true", "yes", "1")
    elif key.kind == "duration":
        value = parse_duration(raw) if raw else None
    elif key.kind == "list":
        value = [part for part in raw.replace(",", " ").split() if part]
    else:
        value = raw
    if key.name in ProviderConfig.__dataclass_fields__ and key.name not in ("extra", "type", "enabled"):
        setattr(provider, key.name, value)
    elif value in ("", None, []):
        provider.extra.pop(key.name, None)
    else:
        provider.extra[key.name] = value


def _shown(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _validator(key: ConfigKey, required: bool, keep_current: bool) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not value:
            return "" if (keep_current or not required) else f"{key.name} is required"
        if key.choices and value not in key.choices:
            return f"{key.name} must be one of: {', '.join(key.choices)}"
        try:
            set_provider_key(ProviderConfig(), key, value)
        except ValueError as exc:
            return str(exc) or f"{key.name}: not a valid {key.kind}"
        return ""

    return check


def _provider_options(config: Config, catalog: SetupCatalog) -> list[Option]:
    """Every configured provider and every installed type no entry uses yet, in ``setup_priority`` order."""
    from paxm_core.install_hints import provider_install_hint

    def label(name: str, spec: ProviderType) -> str:
        return f"{name} ({spec.type})" + (f" - {spec.description}" if spec.description else "")

    ranked: list[tuple[int, Option]] = []
    for name, provider in config.providers.items():
        spec = catalog.provider_types.get(provider.type)
        rank = catalog.provider_priority(provider.type)
        if spec is None:
            hint = provider_install_hint(provider.type)
            ranked.append((rank, Option(name, f"{name} ({provider.type})", disabled=f"not installed. {hint}")))
        else:
            ranked.append((rank, Option(name, label(name, spec), checked=provider.enabled)))
    used = {p.type for p in config.providers.values()}
    for type_name, spec in catalog.provider_types.items():
        name = instance_name_for_type(type_name)
        if type_name not in used and name not in config.providers:
            ranked.append((spec.setup_priority, Option(name, label(name, spec))))
    return [option for _, option in sorted(ranked, key=lambda row: (row[0], row[1].value))]


def _ask_provider_keys(
    prompter: Prompter, config: Config, name: str, catalog: SetupCatalog, options: SetupOptions
) -> None:
    provider = config.providers[name]
    spec = catalog.provider_types[provider.type]
    given = {"api_key": bool(options.api_key), "base_url": bool(options.base_url), "graph_id": bool(options.graph_id)}
    for key in spec.config_keys:
        if not key.ask or given.get(key.name):
            continue
        current = _shown(provider.option(key.name))
        question = f"{name}: {key.description or key.name}"
        if key.secret:
            keep = bool(current)
            hint = "" if "env:" in question else " (a value, or env:VAR_NAME)"
            suffix = " (leave empty to keep the current one)" if keep else hint
            answer = prompter.secret(question + suffix, validate=_validator(key, key.required, keep))
            if answer:
                set_provider_key(provider, key, answer)
            continue
        default = current or _shown(key.default)
        if key.choices:
            answer = prompter.select(question, list(key.choices), default if default in key.choices else key.choices[0])
        else:
            answer = prompter.text(question, default=default, validate=_validator(key, key.required, False))
        set_provider_key(provider, key, answer)


def _agent_options(config: Config, catalog: SetupCatalog) -> tuple[list[Option], set[str]]:
    """One option per agent: every installed integration, the detected ones and the file's choices ticked."""
    from paxm_core.config.setup import agent_order, default_agent_selection, detected_agents
    from paxm_core.install_hints import integration_install_hint

    detected = detected_agents(catalog)
    chosen = default_agent_selection(config, catalog)
    options: list[Option] = []
    undetected: set[str] = set()
    for name in agent_order(config, catalog):
        display = catalog.display_name(name)
        if name not in catalog.integrations:
            hint = integration_install_hint(name) or "no integration plugin is installed for it"
            options.append(Option(name, display, disabled=hint))
            continue
        if name in detected:
            options.append(Option(name, f"{display} (detected)", checked=True))
        else:
            undetected.add(name)
            options.append(Option(name, f"{display} (not detected on this machine)", checked=name in chosen))
    return options, undetected


def ask_setup(prompter: Prompter, config: Config, catalog: SetupCatalog, options: SetupOptions) -> SetupAnswers:
    """Ask for providers, their settings and agents; write the provider answers into ``config``.

    Selections already pinned by ``--provider`` / ``--agent`` are not asked again.  Raises
    :class:`KeyboardInterrupt` when the person cancels.
    """
    answers = SetupAnswers()
    if options.providers:
        answers.providers = list(options.providers)
    else:
        while True:
            picked = prompter.multi_select("Memory providers to enable", _provider_options(config, catalog))
            if picked:
                break
            prompter.note("Choose at least one memory provider (sqlite keeps memories in a local file).")
        answers.providers = picked
    for name in answers.providers:
        if name not in config.providers and name in {instance_name_for_type(t) for t in catalog.provider_types}:
            spec = next(s for t, s in catalog.provider_types.items() if instance_name_for_type(t) == name)
            config.providers[name] = provider_config_from_type(spec)
        if name in config.providers and config.providers[name].type in catalog.provider_types:
            _ask_provider_keys(prompter, config, name, catalog, options)
    if options.agents:
        answers.agents = list(options.agents)
    else:
        agent_options, undetected = _agent_options(config, catalog)
        answers.agents = prompter.multi_select("Agents to connect", agent_options)
        for name in (a for a in answers.agents if a in undetected):
            prompter.note(
                f"warning: {catalog.display_name(name)} was not found on this machine; its hooks are installed"
                " but do nothing until it is installed"
            )
    return answers


def summary_lines(config: Config, agents: list[str], catalog: SetupCatalog) -> list[str]:
    """The review shown before confirming: user, providers with their non-secret settings, agents."""
    lines = ["Setup summary", f"  Config: {config.path}", f"  User: {config.identity.user_id or 'unknown'}"]
    lines.append("  Providers:")
    for name, provider in config.providers.items():
        if not provider.enabled:
            continue
        spec = catalog.provider_types.get(provider.type)
        details: list[str] = []
        for key in spec.config_keys if spec is not None else ():
            value = provider.option(key.name)
            if value in (None, "", [], 0) or not (key.ask or key.name == "base_url"):
                continue
            raw = str(value)
            if key.secret and not raw.strip().startswith(("env:", "${")):
                details.append(f"{key.name}: (set, hidden)")
            else:
                details.append(f"{key.name}: {_shown(value)}")
        lines.append(f"    {name} ({provider.type})" + (f": {', '.join(details)}" if details else ""))
    names = ", ".join(catalog.display_name(a) for a in agents) or "none"
    lines.append(f"  Agents: {names}")
    return lines
