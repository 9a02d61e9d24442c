"""Fake installed distributions for the plugin-loading tests: a module and its ``.dist-info``
(``METADATA`` and a ``[paxm]`` entry point) in a directory put on ``PYTHONPATH``."""

from __future__ import annotations

import textwrap
from pathlib import Path

#: a provider type declaring one secret config key (``idx_passphrase``)
SECRET_PLUGIN = """
    from paxm_core import hookimpl
    @hookimpl
    def paxm_register_providers(register):
        from paxm_core.api.protocols import ConfigKey, ProviderType
        register(ProviderType("secrettype", lambda name, cfg: None,
                              config_keys=(ConfigKey("idx_passphrase", secret=True),)))
    """


def provider_plugin(register_args: str) -> str:
    """A plugin module whose ``paxm_register_providers`` calls ``register(<register_args>)``."""
    return f"""
from paxm_core import hookimpl
@hookimpl
def paxm_register_providers(register):
    register({register_args})
"""


def command_plugin(command: str) -> str:
    """A plugin module adding ``command`` (a click command's source, decorators after
    ``@cli.command()`` and its ``def``) through ``paxm_register_commands``."""
    body = textwrap.indent(textwrap.dedent(command).strip("\n"), "    ")
    return f"""
import click
from paxm_core import hookimpl

@hookimpl
def paxm_register_commands(cli):
    @cli.command()
{body}
"""


def new_site(tmp_path: Path, name: str = "site") -> Path:
    """An empty directory for fake distributions (put it on ``PYTHONPATH``)."""
    site = tmp_path / name
    site.mkdir()
    return site


def make_dist(site: Path, name: str, module: str, body: str, version: str = "1.2.3") -> None:
    """Install distribution ``name`` with the plugin module ``module`` (``body``, dedented) into ``site``."""
    (site / f"{module}.py").write_text(textwrap.dedent(body))
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[paxm]\n{module} = {module}\n")
