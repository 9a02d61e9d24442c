"""The real MemOS product server (MemoryOS 2.0.33) on 127.0.0.1, from its own cached venv.

Postgres + pgvector come from the ``pgserver`` wheel; the embedder and LLM point at the fake
OpenAI endpoint (fast-mode add and search make embedding calls only).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from paxm_contracttest.servers import BackendServer, provision_venv, venv_python

MEMOS_VERSION = "2.0.33"
REQUIREMENTS = [
    f"MemoryOS[mem-reader,tree-mem,mem-scheduler]=={MEMOS_VERSION}",
    "pgserver==0.1.4",
    "psycopg2-binary==2.9.13",
    # imported at start by MemOS's retriever factory although no extra declares it (only "all")
    "jieba==0.42.1",
]
HERE = Path(__file__).parent


def memos_venv() -> Path:
    """The cached venv holding MemoryOS and pgserver (built on first use, ~5 min cold)."""
    return provision_venv("memos", MEMOS_VERSION, REQUIREMENTS)


def memos_env(workdir: Path, pgdata: Path, fake_openai: str) -> dict[str, str]:
    (workdir / "files").mkdir(exist_ok=True)
    (workdir / "home").mkdir(exist_ok=True)
    return {
        "PAXM_MEMOS_PGDATA": str(pgdata),
        "GRAPH_DB_BACKEND": "postgres",
        "POSTGRES_PASSWORD": "",
        "EMBEDDING_DIMENSION": "256",
        "MOS_EMBEDDER_BACKEND": "universal_api",
        "MOS_EMBEDDER_PROVIDER": "openai",
        "MOS_EMBEDDER_API_BASE": fake_openai,
        "MOS_EMBEDDER_API_KEY": "sk-offline",
        "MOS_EMBEDDER_MODEL": "fake-embed",
        "OPENAI_API_KEY": "sk-offline",
        "OPENAI_API_BASE": fake_openai,
        "MOS_CHAT_MODEL": "fake-llm",
        "MEMRADER_API_BASE": fake_openai,
        "MEMRADER_API_KEY": "sk-offline",
        "MEMRADER_MODEL": "fake-llm",
        "MOS_RERANKER_BACKEND": "cosine_local",
        "MOS_FEEDBACK_RERANKER_BACKEND": "cosine_local",
        "ENABLE_PREFERENCE_MEMORY": "false",
        "ENABLE_CHAT_API": "false",
        "ENABLE_INTERNET": "false",
        "API_SCHEDULER_ON": "false",
        "MEMSCHEDULER_USE_REDIS_QUEUE": "false",
        "FILE_LOCAL_PATH": str(workdir / "files"),
        "HOME": str(workdir / "home"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


class MemOSServer(BackendServer):
    """The product server plus its Postgres, restartable on the same data dir."""

    grace = 30.0

    def __init__(self, workdir: Path, fake_openai: str) -> None:
        super().__init__(workdir)
        self.python = venv_python(memos_venv())
        # As root, pgserver runs postgres as its own system user, which cannot enter pytest's
        # 0700 temp dirs: the data dir lives in a short, traversable dir of its own.
        self._pg_parent = Path(tempfile.mkdtemp(prefix="paxm-memos-pg-"))
        self._pg_parent.chmod(0o711)
        argv = [str(self.python), str(HERE / "memos_launcher.py"), str(self.port)]
        self.launch(argv, memos_env(workdir, self._pg_parent / "pg", fake_openai))

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self._pg_parent, ignore_errors=True)


if __name__ == "__main__":  # CI warm-up: build the venv ahead of the tests
    print(memos_venv())
