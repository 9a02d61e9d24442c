"""Write the project's own suites: ``evals/supersession``, ``evals/repeated-questions``, ``evals/partial-matches``,
``evals/paraphrase-unseen``.

    uv run python evals/build_suites.py

The suites are data (upstream's format v1, see ``docs/evals.md``); this script is how they are
made, so a case is changed here and the files rebuilt.  Seeded memories are shaped as the
capture path stores a Claude Code turn (``Claude Code user input:`` / ``Claude Code assistant
response:``) and dated with ``created_at``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKSPACE = "/eval/project-decisions"


def turn(prompt: str, answer: str = "") -> str:
    """A stored Claude Code turn (a prompt with no answer is stored as the prompt alone)."""
    text = f"Claude Code user input:\n{prompt}"
    return f"{text}\n\nClaude Code assistant response:\n{answer}" if answer else text


def memory(case: str, name: str, text: str, day: str, at: str = "10:00") -> dict[str, Any]:
    return {
        "id": f"{case}-{name}",
        "text": text,
        "tier": "ltm",
        "metadata": {"workspace": WORKSPACE},
        "created_at": f"2026-{day}T{at}:00Z",
    }


def recall(mode: str, query: str, limit: int) -> dict[str, Any]:
    return {"mode": mode, "query": query, "limit": limit, "workspace": WORKSPACE, "metadata": {"workspace": WORKSPACE}}


#: (subject, the rule first decided, the later correction, the question asked afterwards)
SUPERSESSIONS = [
    (
        "dedupe",
        turn(
            "Sync keeps duplicate contacts. How do we resolve two records for the same email?",
            "Decided: merge_records keys duplicates on the lowercased email"
            " and keeps the most recently updated record.",
        ),
        turn(
            "Amendment to the merge_records rule: keep-latest wipes names"
            " because the nightly feed sends stripped records.",
            "Amended rule: on a duplicate email merge_records keeps the record"
            " with more filled fields, not the newest one.",
        ),
        "which duplicate record does merge_records keep for the same email",
    ),
    (
        "retry",
        turn(
            "What retry budget does the HTTP client use when a call fails?",
            "Settled: the client retries failed calls 5 times with exponential backoff starting at 200 ms.",
        ),
        turn(
            "Correction on the HTTP client retry budget after the rate-limit incident.",
            "New rule: the client retries failed calls at most 3 times and never retries a 401 or 403.",
        ),
        "how many times does the HTTP client retry failed calls",
    ),
    (
        "branches",
        turn(
            "How should release branches be named?",
            "Release branches are named release/<version>, for example release/2.4.",
        ),
        turn(
            "We are changing the release branch naming.",
            "From now on release branches are named rel-<year>.<minor>; the release/<version> names are retired.",
        ),
        "what are release branches named",
    ),
    (
        "rounding",
        turn(
            "Invoices are off by a cent. How do we round invoice line amounts?",
            "Decided: invoice line amounts are rounded half-up to the cent per line.",
        ),
        turn(
            "Finance changed the invoice rounding policy.",
            "Invoice amounts now use banker's rounding (half-even) on the invoice total only, never per line.",
        ),
        "how are invoice amounts rounded",
    ),
    (
        "timeout",
        turn(
            "What timeout do database migrations get in CI?",
            "Migrations in CI time out after 10 minutes; the job fails after that.",
        ),
        turn(
            "The migrations timeout in CI is too short for the big tables.",
            "Raised: migrations in CI now time out after 45 minutes, and the job posts a warning at 30.",
        ),
        "migrations timeout in CI",
    ),
    (
        "logging",
        turn(
            "What log level does the sync worker use for per-record events?",
            "Per-record sync events are logged at info level so support can read them.",
        ),
        turn(
            "The sync worker flooded the log pipeline yesterday.",
            "Changed: per-record sync events go to debug level; info gets one summary line per sync run.",
        ),
        "which log level for sync worker per-record events",
    ),
    (
        "owner",
        turn(
            "Who reviews changes to the payments module?",
            "Changes to the payments module need a review from Dana.",
        ),
        turn(
            "Dana moved to the platform team.",
            "Payments module reviews now go to Priya; Dana no longer reviews payments changes.",
        ),
        "who reviews payments module changes",
    ),
    (
        "tags",
        turn(
            "How does merge_tags treat tag casing?",
            "merge_tags lowercases every tag before de-duplicating.",
        ),
        turn(
            "Lowercasing broke the Terraform provider, which treats tag casing as significant.",
            "merge_tags must never lowercase: keep the casing of the first occurrence"
            " and de-duplicate case-insensitively.",
        ),
        "does merge_tags lowercase tag casing",
    ),
]

#: (subject, the answer turn, a question-only turn asked again later, the question)
REPEATS = [
    (
        "branches",
        turn(
            "How should release branches be named?", "Release branches are named release/<version>, e.g. release/2.4."
        ),
        "How should release branches be named?",
        "How should release branches be named?",
    ),
    (
        "staging",
        turn(
            "Where does the staging database live?",
            "The staging database is the db-staging-2 instance in eu-west-1; credentials are in the vault.",
        ),
        "Where does the staging database live again?",
        "where does the staging database live",
    ),
    (
        "ports",
        turn(
            "Which port does the metrics exporter listen on?",
            "The metrics exporter listens on port 9464 on every node.",
        ),
        "Which port does the metrics exporter listen on?",
        "which port does the metrics exporter listen on",
    ),
    (
        "retry",
        turn(
            "What retry budget does the HTTP client use?",
            "The HTTP client retries 3 times with exponential backoff and never retries a 401.",
        ),
        "What retry budget does the HTTP client use?",
        "what retry budget does the HTTP client use",
    ),
    (
        "python",
        turn(
            "What is the minimum Python version we support?",
            "We support Python 3.11 and newer; 3.10 was dropped in the spring release.",
        ),
        "What is the minimum Python version we support?",
        "minimum Python version we support",
    ),
    (
        "oncall",
        turn(
            "Who is on call for the billing service this week?",
            "Billing on-call this week is Marco; the rota is in the ops calendar.",
        ),
        "who is on call for the billing service this week?",
        "who is on call for the billing service",
    ),
]


def supersession_cases() -> list[dict[str, Any]]:
    cases = []
    for subject, old, new, query in SUPERSESSIONS:
        for mode, limit in (("active", 3), ("passive_initial", 5)):
            case = f"supersession-{subject}-{mode}"
            cases.append(
                {
                    "id": case,
                    "category": f"newer_decision_{mode}",
                    "memories": [memory(case, "rule", old, "03-02"), memory(case, "correction", new, "05-04")],
                    "recall": recall(mode, query, limit),
                    "expected": [f"{case}-correction"],
                    "expected_first": f"{case}-correction",
                }
            )
    # corrected later in the same session, ten minutes on
    for subject, old, new, query in SUPERSESSIONS[4:]:
        case = f"supersession-{subject}-same-session"
        cases.append(
            {
                "id": case,
                "category": "newer_decision_same_session",
                "memories": [memory(case, "rule", old, "03-02"), memory(case, "correction", new, "03-02", "10:10")],
                "recall": recall("active", query, 3),
                "expected": [f"{case}-correction"],
                "expected_first": f"{case}-correction",
            }
        )
    # a newer memory on another subject does not displace the one the question is about
    for subject, old, _new, query in SUPERSESSIONS[:4]:
        case = f"supersession-{subject}-unrelated-newer"
        other = SUPERSESSIONS[(SUPERSESSIONS.index((subject, old, _new, query)) + 4) % len(SUPERSESSIONS)][2]
        cases.append(
            {
                "id": case,
                "category": "older_on_topic",
                "memories": [memory(case, "rule", old, "03-02"), memory(case, "other", other, "05-04")],
                "recall": recall("active", query, 3),
                "expected": [f"{case}-rule"],
                "expected_first": f"{case}-rule",
            }
        )
    return cases


def repeated_cases() -> list[dict[str, Any]]:
    cases = []
    for subject, answer, asked, query in REPEATS:
        for mode, limit in (("active", 3), ("passive_initial", 2), ("passive", 2)):
            case = f"repeat-{subject}-{mode}"
            memories = [memory(case, "answer", answer, "03-02")]
            # asked again twice later: once with a non-answer, once with no answer at all
            memories.append(memory(case, "asked-1", turn(asked, "Let me check and get back to you."), "04-06"))
            memories.append(memory(case, "asked-2", turn(asked), "05-04"))
            cases.append(
                {
                    "id": case,
                    "category": f"answer_over_question_{mode}",
                    "memories": memories,
                    "recall": recall(mode, query, limit),
                    "expected": [f"{case}-answer"],
                    "expected_first": f"{case}-answer",
                    # the question's copies take no slot of a passive limit
                    "forbidden": [] if mode == "active" else [f"{case}-asked-1", f"{case}-asked-2"],
                }
            )
    return cases


def echo_cases() -> list[dict[str, Any]]:
    """The question asked again, answered only by saying it back (asking back, restating)."""
    cases = []
    for subject, answer, asked, query in REPEATS:
        plain = asked.rstrip("?")
        for mode, limit in (("active", 3), ("passive_initial", 2), ("passive", 2)):
            case = f"echo-{subject}-{mode}"
            echoes = [
                memory(case, "asks-back", turn(asked, f"Good question. {asked} Which would you prefer?"), "04-06"),
                memory(case, "restates", turn(asked, f"You are asking: {plain[0].lower()}{plain[1:]}."), "05-04"),
            ]
            cases.append(
                {
                    "id": case,
                    "category": f"echo_below_answer_{mode}",
                    "memories": [memory(case, "answer", answer, "03-02"), *echoes],
                    "recall": recall(mode, query, limit),
                    "expected": [f"{case}-answer"],
                    "expected_first": f"{case}-answer",
                    # a passive slot holds the answer, never a copy of the question
                    "forbidden": [] if mode == "active" else [e["id"] for e in echoes],
                }
            )
    return cases


#: One project's notes: each query below is about one of them and shares a word in passing with others.
NOTES = {
    "pgbouncer": "The API reaches Postgres through pgbouncer in transaction pooling mode;"
    " prepared statements are disabled for that reason.",
    "sentry": "Errors from the worker processes are reported to Sentry under the project name billing-worker.",
    "flags": "Feature flags live in LaunchDarkly; a flag older than 90 days must be removed in the next sprint.",
    "release-notes": "Release notes are drafted from merged pull request titles by the changelog bot every Friday.",
    "glacier": "Uploaded invoices in the S3 bucket move to Glacier after 180 days by a lifecycle rule.",
    "grpc": "Every gRPC call between services sets a deadline of 2 seconds; the gateway retries once on UNAVAILABLE.",
    "css": "Component styles use CSS modules; global stylesheets are only for the design tokens.",
    "ssh": "Production hosts accept SSH only through the bastion with short-lived certificates from Vault.",
    "cron": "The nightly report cron runs at 02:30 UTC on the scheduler node, not on the web hosts.",
    "dates": "Dates shown to users are formatted with the user's locale; stored dates are always UTC.",
    "load-tests": "Load tests run with k6 against staging every Tuesday; production is never load tested.",
    "typing": "New Python modules must pass mypy --strict; legacy modules are listed in the mypy exclude.",
}

#: (name, query, the note it is about, notes sharing only a word or two of it in passing)
PARTIAL_QUERIES = [
    ("pooling", "which pooling mode does pgbouncer use for the production API", ["pgbouncer"], ["ssh", "load-tests"]),
    ("sentry", "which sentry project do the nightly worker errors go to", ["sentry"], ["cron"]),
    ("stale-flags", "how many days before a stale feature flag must be removed", ["flags"], ["glacier"]),
    ("grpc-staging", "what deadline does a gRPC call get in staging", ["grpc"], ["load-tests"]),
    ("glacier", "after how many days do uploaded invoices move to Glacier", ["glacier"], ["flags"]),
    ("css", "do component styles use CSS modules or global stylesheets in production", ["css"], ["ssh", "load-tests"]),
    ("bastion", "how do I ssh into a production host through the bastion", ["ssh"], ["cron", "load-tests"]),
    ("cron", "what time UTC does the nightly report cron run", ["cron"], ["dates", "load-tests", "sentry"]),
    ("dates", "are stored dates kept in UTC or in the user's locale", ["dates"], ["cron"]),
    ("k6", "when do k6 load tests run against staging", ["load-tests"], ["cron"]),
    ("mypy", "does mypy strict apply to new python modules", ["typing"], ["css"]),
    ("changelog", "who drafts the release notes from merged pull requests", ["release-notes"], []),
    # two subjects asked together: each note holds half the query or more, both are returned
    ("two-pgbouncer-sentry", "pgbouncer and sentry setup", ["pgbouncer", "sentry"], []),
    ("two-glacier-k6", "glacier lifecycle and the k6 load tests", ["glacier", "load-tests"], []),
    ("two-bastion-grpc", "bastion certificates and grpc deadlines", ["ssh", "grpc"], []),
]


def partial_cases() -> list[dict[str, Any]]:
    """A query about one note returns it without the notes that share a word of it in passing."""
    cases = []
    for name, query, about, passing in PARTIAL_QUERIES:
        for limit in (3, 10):
            case = f"partial-{name}-limit{limit}"
            cases.append(
                {
                    "id": case,
                    "category": "two_subjects" if len(about) > 1 else f"passing_word_limit{limit}",
                    "memories": [memory(case, note, text, "03-02") for note, text in NOTES.items()],
                    "recall": recall("active", query, limit),
                    "expected": [f"{case}-{note}" for note in about],
                    "forbidden": [f"{case}-{note}" for note in passing],
                }
            )
    return cases


# --- evals/paraphrase-unseen: held-out paraphrases (written apart from the hybrid's own suite) ---

#: a coding project's captured Claude Code turns, seeded in every case: name -> (prompt, answer)
UNSEEN_POOL = {
    "tz": (
        "test_schedule_window passes in CI but fails on my laptop. Any idea?",
        "Found it: the test depends on the machine's timezone and CI runs in UTC. conftest.py now sets"
        " TZ=UTC with monkeypatch.setenv before the scheduler module is imported.",
    ),
    "pnpm": (
        "Which package manager does the web frontend use?",
        "The frontend uses pnpm 9 with a committed pnpm-lock.yaml; npm install breaks the workspace"
        " links, so never run it in web/.",
    ),
    "money": (
        "How should the order service represent prices?",
        "Decided: amounts are stored as integer cents (BIGINT) next to an ISO currency code column;"
        " no float or NUMERIC columns for prices.",
    ),
    "commits": (
        "What commit message style do we follow?",
        "Conventional Commits: feat:, fix:, chore: prefixes and a subject under 72 characters; the"
        " release tool derives the version bump from them.",
    ),
    "flaky-e2e": (
        "The Playwright checkout test fails about once in ten runs.",
        "Root cause: it clicked Pay before the Stripe iframe had loaded. It now waits for the frame's"
        " ready event; no sleeps, and Playwright retries stay disabled on purpose.",
    ),
    "secrets": (
        "Where do API keys for local development go?",
        "Local keys live in .env.local, which is gitignored, and are read through pydantic-settings;"
        " never commit them to config.yaml.",
    ),
    "python-version": (
        "Which Python version should the services target?",
        "All services run on Python 3.12: the Docker base image is python:3.12-slim and pyproject.toml"
        " pins requires-python >=3.12.",
    ),
    "oom": (
        "The worker pod keeps getting OOMKilled during the nightly export.",
        "The export loaded the whole table into a list. It now streams through a server-side cursor,"
        " 5,000 rows at a time, and stays under 300 MB.",
    ),
    "api-versioning": (
        "How do we handle breaking changes to the REST API?",
        "Breaking changes go under a new /v2 prefix; /v1 is frozen and kept for six months after v2"
        " ships, answering with a Sunset header.",
    ),
    "review": (
        "How many approvals does a pull request need before merge?",
        "Two approvals, one of them from a code owner of the touched directory; the author squash-merges"
        " once CI is green.",
    ),
    "logging-format": (
        "What format should service logs use?",
        "Structured JSON through structlog, one event per line, with request_id bound by the middleware;"
        " no f-string log messages.",
    ),
    "docker-arm": (
        "docker build fails on my M2 Mac with exec format error.",
        "The image pulled amd64 binaries. Build with --platform linux/amd64 or use the multi-arch base;"
        " the Makefile sets DOCKER_DEFAULT_PLATFORM for that.",
    ),
    "index": (
        "Search on the orders page is slow.",
        "EXPLAIN showed a sequential scan on orders.customer_email. A btree index on"
        " lower(customer_email) took the query from 2.3 s to 8 ms.",
    ),
    "mtls": (
        "How do our services authenticate to each other?",
        "Service-to-service calls use mTLS with certificates from the internal CA; services never share API tokens.",
    ),
    "tests-db": (
        "Should unit tests hit a real database?",
        "Yes: tests run against a real Postgres started by testcontainers once per session. Mocking the"
        " ORM is not allowed; it hid two bugs last quarter.",
    ),
    "ruff": (
        "Which formatter and linter do we use for Python?",
        "ruff format and ruff check, configured in pyproject.toml; black and isort were removed. pre-commit runs both.",
    ),
    "uploads": (
        "Users report that file uploads fail at around 10 MB.",
        "nginx had client_max_body_size 10m. It is 200m on the upload route only, and files over 50 MB"
        " go straight to S3 with presigned URLs.",
    ),
    "cors": (
        "The browser console shows a CORS error when the admin app calls the API.",
        "The admin origin was missing from ALLOWED_ORIGINS; https://admin.example.com is added to the"
        " env var. Wildcard origins are forbidden because cookies are sent.",
    ),
    "renovate": (
        "How do we keep dependencies up to date?",
        "Renovate opens grouped PRs every Monday; patch updates automerge when CI passes, majors need a human review.",
    ),
    "backups": (
        "How are production database backups done?",
        "WAL-G ships a base backup nightly and WAL continuously to object storage; a restore is"
        " rehearsed on the first Monday of each month.",
    ),
    "celery": (
        "Background jobs sometimes run twice.",
        "The Redis broker's visibility timeout (1 h) was shorter than the longest task. Tasks are now"
        " idempotent on a job key and acks_late is on.",
    ),
    "shared-code": (
        "Where should new shared code go?",
        "Into packages/common, a workspace package; services must not import from each other's src directories.",
    ),
    "bundle": (
        "What is our bundle size limit for the web app?",
        "The main JS bundle must stay under 250 kB gzipped; size-limit fails CI when a PR goes over.",
    ),
    "gpu": (
        "The training notebook cannot see the GPU in the dev container.",
        "The container was started without --gpus all. devcontainer.json now passes --gpus=all in"
        " runArgs and uses the CUDA 12.4 base image.",
    ),
}

#: off-topic turns, each seeded only in its own case: name -> (prompt, answer)
UNSEEN_EXTRA = {
    "sourdough": (
        "Off topic: my sourdough starter smells like nail polish remover. Is it dead?",
        "It is hungry, not dead: that acetone smell means it ran out of food. Feed it twice a day at"
        " 1:1:1 for a few days.",
    ),
    "marathon": (
        "Unrelated, but how should I taper before my first marathon?",
        "Cut weekly mileage by about a third in each of the last three weeks, keep a few short runs at"
        " race pace, and sleep more.",
    ),
    "tomatoes": (
        "My tomato plants have yellow lower leaves with brown spots.",
        "Probably early blight: remove the affected leaves, water at the base in the morning, mulch,"
        " and rotate the bed next year.",
    ),
    "bike": (
        "My bike chain skips under load since I replaced the cassette.",
        "A new cassette with a worn chain skips. Measure the chain with a checker and replace it when"
        " it is past 0.75% stretch.",
    ),
    "moka": (
        "What grind should I use for a moka pot?",
        "Slightly coarser than espresso; fill the basket without tamping and take it off the heat as"
        " soon as it gurgles.",
    ),
    "cat": (
        "My cat keeps scratching the sofa.",
        "Put a tall sisal post right next to the sofa, reward her for using it, and cover the corner"
        " with double-sided tape for a few weeks.",
    ),
}

#: (category, query, the memory that answers it, memories that must not be returned)
#: paraphrase: little or no word overlap with its memory; trap: the query's words point at another
#: memory than its meaning; control: direct overlap; offtopic: outside software, answered by the
#: case's own extra turn (every pool memory is forbidden: none may pad the result)
UNSEEN_CASES = [
    (
        "paraphrase",
        "my check is green in the pipeline but red on my own computer, is the clock region to blame",
        "tz",
        [],
    ),
    ("paraphrase", "which tool installs the JavaScript libraries for the UI", "pnpm", []),
    ("paraphrase", "how do we keep currency values without rounding errors", "money", []),
    ("paraphrase", "how should I word what I write when saving changes into git history", "commits", []),
    ("paraphrase", "the browser scenario around paying is unreliable, what did we learn", "flaky-e2e", []),
    ("paraphrase", "where do I put personal credentials for running things on my own machine", "secrets", ["mtls"]),
    ("paraphrase", "which interpreter release do our backends run on", "python-version", []),
    ("paraphrase", "the container ran out of RAM while dumping data overnight, how was that solved", "oom", []),
    ("paraphrase", "what do we do when an endpoint change would break existing consumers", "api-versioning", []),
    ("paraphrase", "who has to sign off before code lands on main", "review", []),
    ("paraphrase", "how should the apps emit their diagnostic output", "logging-format", []),
    ("paraphrase", "an image will not start on an Apple silicon laptop", "docker-arm", ["gpu"]),
    ("paraphrase", "why was looking up purchases by buyer address so sluggish and what fixed it", "index", []),
    ("paraphrase", "how does one backend prove its identity to another", "mtls", ["secrets"]),
    ("paraphrase", "are we allowed to fake the persistence layer in automated checks", "tests-db", []),
    ("paraphrase", "what keeps code style consistent before I push", "ruff", []),
    ("paraphrase", "sending big attachments breaks past a certain size, what was the fix", "uploads", []),
    ("paraphrase", "the back office site is blocked by the browser from talking to the server", "cors", []),
    ("paraphrase", "how do third-party library bumps get proposed and merged", "renovate", []),
    ("paraphrase", "if prod data were lost, how would we get it back", "backups", []),
    ("paraphrase", "queued work items occasionally execute a second time, why", "celery", []),
    ("paraphrase", "where do I put a helper that several services want to reuse", "shared-code", []),
    ("paraphrase", "how heavy may the client-side script payload get", "bundle", ["uploads"]),
    ("paraphrase", "my deep learning code in the devbox cannot find the graphics card", "gpu", []),
    ("trap", "besides the nginx upload cap, what ceiling does the script code we ship have", "bundle", ["uploads"]),
    ("trap", "why did the nightly export job execute two times", "celery", ["oom"]),
    ("trap", "where does my local Stripe test key go", "secrets", ["flaky-e2e"]),
    ("trap", "the admin app was slow to find a customer by email, what made it fast", "index", ["cors"]),
    (
        "trap",
        "the platform flag and multi-arch build are fine, yet the notebook sees no accelerator",
        "gpu",
        ["docker-arm"],
    ),
    (
        "trap",
        "how long is the old major version of our endpoints supported after a breaking release",
        "api-versioning",
        ["renovate"],
    ),
    (
        "trap",
        "what message style and format do we follow for what services print at runtime",
        "logging-format",
        ["commits", "ruff"],
    ),
    (
        "trap",
        "besides the grouped Monday PRs, what Monday routine shows lost data can be brought back",
        "backups",
        ["renovate"],
    ),
    ("trap", "which tool checks our Python before each commit", "ruff", ["commits", "python-version"]),
    ("trap", "do our services read each other's API keys from .env.local to call one another", "mtls", ["secrets"]),
    ("control", "which package manager does the frontend use, pnpm or npm", "pnpm", ["bundle"]),
    ("control", "store price amounts as integer cents with a currency code", "money", ["index"]),
    ("control", "worker pod OOMKilled during the nightly export", "oom", ["backups"]),
    ("control", "nginx client_max_body_size for file uploads", "uploads", ["bundle"]),
    ("control", "CORS error when the admin app calls the API", "cors", ["api-versioning"]),
    ("control", "Renovate automerge for patch updates", "renovate", ["python-version"]),
    ("control", "WAL-G base backups to object storage", "backups", ["python-version"]),
    ("control", "Playwright checkout test flaky with the Stripe iframe", "flaky-e2e", ["tz"]),
    ("control", "testcontainers Postgres for unit tests instead of mocking the ORM", "tests-db", ["tz"]),
    ("control", "TZ=UTC in conftest for test_schedule_window", "tz", ["tests-db"]),
    ("offtopic", "what does it mean when a fermenting bread culture gives off a solvent odour", "sourdough", []),
    ("offtopic", "how to ease off training in the weeks before a long-distance race", "marathon", []),
    ("offtopic", "bottom foliage on my vegetable garden is going yellow with dark patches", "tomatoes", []),
    ("offtopic", "bicycle drivetrain slips when pedalling hard after new rear cogs", "bike", []),
    ("offtopic", "how fine should beans be milled for a stovetop espresso maker", "moka", []),
    ("offtopic", "stop a kitten from clawing the furniture", "cat", []),
]


def unseen_cases() -> list[dict[str, Any]]:
    """Every case seeds the whole pool (and an off-topic case its own extra turn); active, limit 3."""
    cases = []
    counts: dict[str, int] = {}
    for category, query, about, others in UNSEEN_CASES:
        counts[category] = counts.get(category, 0) + 1
        case = f"{category}-{counts[category]:02d}"
        notes = [*UNSEEN_POOL.items(), *([(about, UNSEEN_EXTRA[about])] if about in UNSEEN_EXTRA else [])]
        forbidden = list(UNSEEN_POOL) if category == "offtopic" else others
        entry: dict[str, Any] = {
            "id": case,
            "category": category,
            "memories": [memory(case, name, turn(*qa), f"02-{1 + i % 28:02d}") for i, (name, qa) in enumerate(notes)],
            "recall": recall("active", query, 3),
            "expected": [f"{case}-{about}"],
            "forbidden": [f"{case}-{name}" for name in forbidden],
        }
        if category in ("trap", "control"):
            entry["expected_first"] = f"{case}-{about}"
        cases.append(entry)
    return cases


def write(name: str, cases: list[dict[str, Any]]) -> None:
    directory = HERE / name
    directory.mkdir(exist_ok=True)
    suite = {"version": 1, "name": name, "cases": cases}
    (directory / "suite.json").write_text(json.dumps(suite, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    write("supersession", supersession_cases())
    write("repeated-questions", repeated_cases() + echo_cases())
    write("partial-matches", partial_cases())
    write("paraphrase-unseen", unseen_cases())


if __name__ == "__main__":
    main()
