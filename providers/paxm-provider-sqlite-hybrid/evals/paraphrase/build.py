"""Regenerate ``suite.json`` (the paraphrase suite) from the tables below: ``python build.py``.

Every case seeds the same pool of realistic coding-agent memories, so each query competes
with every other memory.  Kinds: ``paraphrase`` (little or no word overlap with its target),
``trap`` (the query's words point at a different memory than its meaning), ``control``
(direct overlap: the lexical path must keep answering these exactly) and ``offtopic``
(a query about something outside software, answered by one extra memory seeded for that case
only: no memory of the pool may pad the result).
"""

from __future__ import annotations

import json
from pathlib import Path

WORKSPACE = "/eval/paraphrase-shop"

POOL = {
    "deploy": (
        "Production deploys only go through the CI pipeline; nobody pushes container images to the registry by hand."
    ),
    "gitpush": "Never push directly to main: open a pull request and wait for two approvals.",
    "dbreset": (
        "To wipe the local test database run `make db-reset`; it drops and recreates the schema from migrations."
    ),
    "dbbackup": "Nightly backups of the production Postgres are kept for 30 days in the backups bucket.",
    "python": "The project is pinned to Python 3.11 because the onnxruntime wheels lag behind new interpreters.",
    "format": "Code style is enforced with ruff format and ruff check; black and isort are not used any more.",
    "flaky": "test_checkout_timeout is flaky on CI under load; rerun it once before investigating.",
    "secrets": "API keys live in 1Password and are injected as environment variables; never commit them to the repo.",
    "logging": "Use the structlog logger from app.logging instead of print statements so output is JSON in production.",
    "cache": "Redis is the cache for session data; entries expire after 15 minutes.",
    "ratelimit": "The public API allows 100 requests per minute per token; beyond that it answers 429.",
    "frontend": "The web frontend is built with Vite and React; run pnpm dev to start it on port 5173.",
    "oncall": "Pager alerts go to the #incidents Slack channel; the on-call rotation changes every Monday.",
    "migrations": "Database schema changes need an Alembic migration checked in with the model change.",
    "timezone": "All timestamps are stored in UTC and converted to the user's zone only in the UI.",
    "docker": "Local development runs in docker compose; the app container mounts the source for hot reload.",
    "branches": "Feature branches are named feat/<ticket>-short-title and bug fixes fix/<ticket>-short-title.",
    "perf": "The search endpoint must answer within 200 ms at p95; the benchmark lives in bench/search.py.",
    "deps": "Adding a third-party dependency needs a note in docs/dependencies.md with its licence.",
    "i18n": "User-facing strings go through gettext; translators work in the locale/ directory.",
    "cook": "Personal note: the sourdough starter needs feeding twice a day.",
}

# (kind, query, expected memory, forbidden memories)
CASES: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("paraphrase", "how do we ship a new version to prod?", "deploy", ("cook", "i18n")),
    ("paraphrase", "how can I start over with a clean local DB for tests?", "dbreset", ("dbbackup", "cook")),
    ("paraphrase", "which interpreter release are we locked to, and why?", "python", ("cook", "i18n")),
    ("paraphrase", "what tool tidies up the code layout?", "format", ("cook", "oncall")),
    ("paraphrase", "a checkout test sometimes fails randomly in the pipeline, is that known?", "flaky", ("cook",)),
    ("paraphrase", "where should credentials be kept?", "secrets", ("cook", "timezone")),
    ("paraphrase", "how should the service emit diagnostic output?", "logging", ("cook", "timezone")),
    ("paraphrase", "how long does a login session stay in the in-memory store?", "cache", ("cook", "oncall")),
    ("paraphrase", "what happens when a client calls us too often?", "ratelimit", ("cook", "i18n")),
    ("paraphrase", "how do I bring up the UI on my machine?", "frontend", ("cook", "oncall")),
    ("paraphrase", "who gets woken up when something breaks at night?", "oncall", ("cook", "i18n")),
    ("paraphrase", "I altered a table column, what else has to be committed?", "migrations", ("cook", "i18n")),
    ("paraphrase", "in which zone are dates persisted?", "timezone", ("cook", "deps")),
    ("paraphrase", "is the dev setup containerised?", "docker", ("cook", "i18n")),
    ("paraphrase", "what should I call my git branch for a bugfix?", "branches", ("cook", "cache")),
    ("paraphrase", "what latency target does lookup have?", "perf", ("cook", "i18n")),
    ("paraphrase", "I want to pull in a new library, are there rules?", "deps", ("cook", "oncall")),
    ("paraphrase", "how long do we retain copies of the live database?", "dbbackup", ("cook", "i18n")),
    ("paraphrase", "can I commit straight to the primary branch?", "gitpush", ("cook", "timezone")),
    ("paraphrase", "how do we translate the interface text?", "i18n", ("cook", "timezone")),
    ("trap", "which Python logger should the production service use?", "logging", ("python", "cook")),
    ("trap", "how many minutes before a cached session key is gone?", "cache", ("ratelimit", "cook")),
    ("trap", "before I open a pull request, which formatter must pass?", "format", ("cook", "i18n")),
    ("trap", "do the test database migrations need wiping before a run?", "dbreset", ("cook",)),
    ("trap", "what port should the docker API container listen on for the frontend dev server?", "frontend", ("cook",)),
    ("trap", "the search benchmark keeps timing out on CI under load, rerun?", "flaky", ("cook", "i18n")),
    ("trap", "which Slack channel handles production deploys?", "deploy", ("cook", "i18n")),
    ("trap", "what UTC time do nightly backups run in the UI?", "dbbackup", ("cook",)),
    ("control", "make db-reset", "dbreset", ("dbbackup",)),
    ("control", "ruff format", "format", ("python",)),
    ("control", "Alembic migration", "migrations", ("dbreset",)),
    ("control", "test_checkout_timeout flaky", "flaky", ("perf",)),
    ("control", "pnpm dev port 5173", "frontend", ("docker",)),
    ("control", "requests per minute per token", "ratelimit", ("cache",)),
    ("control", "structlog logger", "logging", ("python",)),
    ("control", "docs/dependencies.md licence", "deps", ("secrets",)),
    ("control", "on-call rotation Monday", "oncall", ("deploy",)),
    ("control", "deployment pipeline", "deploy", ("cook",)),
    ("offtopic", "who won the football match last night?", "x-football", tuple(POOL)),
    ("offtopic", "recommend a science fiction novel for the holidays", "x-novel", tuple(POOL)),
    ("offtopic", "what is the weather like in Lisbon in spring?", "x-weather", tuple(POOL)),
    ("offtopic", "how tall is the Eiffel tower?", "x-eiffel", tuple(POOL)),
    ("offtopic", "best way to learn the guitar as an adult", "x-guitar", tuple(POOL)),
    ("offtopic", "what is the capital of Australia?", "x-capital", tuple(POOL)),
]

#: The one extra memory of each ``offtopic`` case (paraphrased, so the lexical stages miss it).
EXTRA = {
    "x-football": "Benfica beat Porto 2-1 in yesterday evening's game.",
    "x-novel": "Alex recommended reading The Left Hand of Darkness over the winter break.",
    "x-weather": "Portugal's capital is mild and sunny from March to May, around 20 degrees.",
    "x-eiffel": "The Paris landmark built for the 1889 exposition is about 330 metres high.",
    "x-guitar": "Grown-ups picking up six-string playing do best with short daily practice and a teacher.",
    "x-capital": "Canberra, not Sydney, is where Australia's federal parliament sits.",
}


def _mid(key: str) -> str:
    return f"mem-{key}"


def build() -> dict[str, object]:
    cases = []
    counters: dict[str, int] = {}
    for kind, query, expected, forbidden in CASES:
        counters[kind] = counters.get(kind, 0) + 1
        case: dict[str, object] = {
            "id": f"{kind}-{counters[kind]:02d}",
            "category": kind,
            "memories": [
                {"id": _mid(k), "text": t, "tier": "ltm", "metadata": {"workspace": WORKSPACE}}
                for k, t in [*POOL.items(), *([(expected, EXTRA[expected])] if expected in EXTRA else [])]
            ],
            "recall": {
                "mode": "active",
                "query": query,
                "limit": 3,
                "workspace": WORKSPACE,
                "metadata": {"workspace": WORKSPACE},
            },
            "expected": [_mid(expected)],
            "forbidden": [_mid(k) for k in forbidden if k != expected],
        }
        if kind in ("trap", "control"):
            case["expected_first"] = _mid(expected)
        cases.append(case)
    return {"version": 1, "name": "hybrid-paraphrase", "cases": cases}


if __name__ == "__main__":
    out = Path(__file__).with_name("suite.json")
    out.write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out}")
