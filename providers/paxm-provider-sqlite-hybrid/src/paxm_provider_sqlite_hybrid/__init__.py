"""paxm provider ``sqlite-hybrid``: SQLite FTS5 plus an offline embedding model for paraphrase.

Only the hookimpls live here, so loading the plugin imports neither numpy nor onnxruntime;
the model is loaded the first time a hybrid provider embeds something.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from paxm_core import ProviderConfig, hookimpl

if TYPE_CHECKING:
    import click


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider

    return HybridSQLiteProvider(name, config)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    # Registered by path: nothing is imported until `paxm config doctor` runs the check.
    from paxm_core.doctor import register_check

    register_check("sqlite-hybrid", "paxm_provider_sqlite_hybrid.doctor:check_vectors")
    register(
        "sqlite-hybrid",
        _factory,
        # `paxm setup` shows this beside the type; it does not pick the hybrid over `sqlite` by
        # itself (docs/hybrid-retrieval.md, "Should setup pick it").
        description=(
            "Local SQLite FTS5 fused with an offline MiniLM embedding model: finds paraphrases"
            " sqlite misses, for ~90-125 MB more memory at 100k memories and slower writes"
        ),
        capabilities=("put_batch", "delete", "cleanup_expired", "close", "turn_boundaries", "attribution"),
    )


@hookimpl
def paxm_register_commands(cli: click.Group) -> None:
    from paxm_provider_sqlite_hybrid.cli import hybrid

    cli.add_command(hybrid)
