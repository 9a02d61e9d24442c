"""Run the real MemOS 2.0.33 product server offline (executed by the memos venv's Python).

Usage: ``python memos_launcher.py PORT`` with ``PAXM_MEMOS_PGDATA`` naming the Postgres data dir.
It works around what keeps the product server from running here:

* chonkie's ``gpt2`` tokenizer is downloaded from Hugging Face at start: use its offline
  ``character`` tokenizer instead;
* Neo4j is not installable: Postgres 16 + pgvector from the ``pgserver`` wheel serves the
  ``postgres`` graph backend over a unix socket;
* MemOS reads pgvector columns back as ``'[..]'`` strings: register a psycopg2 caster;
* uvicorn re-raises SIGTERM after a graceful shutdown, which skips ``finally``: turn SIGTERM
  into ``SystemExit`` so Postgres is always stopped.
"""

import os
import signal
import sys
from urllib.parse import parse_qs, urlparse

import chonkie

_Chunker = chonkie.SentenceChunker


class _OfflineChunker(_Chunker):  # type: ignore[misc, valid-type]
    def __init__(self, *args, tokenizer="character", **kwargs):
        if tokenizer == "gpt2":
            tokenizer = "character"
        if kwargs.get("tokenizer_or_token_counter") == "gpt2":
            kwargs["tokenizer_or_token_counter"] = "character"
        super().__init__(*args, tokenizer=tokenizer, **kwargs)


chonkie.SentenceChunker = _OfflineChunker

import pgserver  # noqa: E402
import psycopg2  # noqa: E402
import psycopg2.extensions  # noqa: E402

pg = pgserver.get_server(os.environ["PAXM_MEMOS_PGDATA"], cleanup_mode="stop")
os.environ["POSTGRES_HOST"] = parse_qs(urlparse(pg.get_uri()).query)["host"][0]
os.environ.setdefault("POSTGRES_PORT", "5432")
os.environ.setdefault("POSTGRES_USER", "postgres")
os.environ.setdefault("POSTGRES_DB", "postgres")


def _stop_postgres():
    from pgserver._commands import pg_ctl

    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pg.pgdata, user=pg.system_user)
    except Exception as exc:  # already stopped
        print(f"pg_ctl stop: {exc}", file=sys.stderr)


try:
    conn = psycopg2.connect(
        host=os.environ["POSTGRES_HOST"],
        port=os.environ["POSTGRES_PORT"],
        user=os.environ["POSTGRES_USER"],
        password=os.environ.get("POSTGRES_PASSWORD", ""),
        dbname=os.environ["POSTGRES_DB"],
    )
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cur.execute("SELECT 'vector'::regtype::oid")
        vector_oid = cur.fetchone()[0]
    conn.close()
    psycopg2.extensions.register_type(
        psycopg2.extensions.new_type(
            (vector_oid,),
            "VECTOR",
            lambda value, cur: None if value is None else [float(x) for x in value.strip("[]").split(",") if x],
        )
    )

    def _exit(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _exit)
    import uvicorn

    uvicorn.run("memos.api.server_api:app", host="127.0.0.1", port=int(sys.argv[1]), workers=1, log_level="warning")
finally:
    _stop_postgres()
