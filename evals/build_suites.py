"""Write the project's own suites: ``evals/supersession``, ``evals/repeated-questions``, ``evals/partial-matches``.

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


def write(name: str, cases: list[dict[str, Any]]) -> None:
    directory = HERE / name
    directory.mkdir(exist_ok=True)
    suite = {"version": 1, "name": name, "cases": cases}
    (directory / "suite.json").write_text(json.dumps(suite, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    write("supersession", supersession_cases())
    write("repeated-questions", repeated_cases() + echo_cases())
    write("partial-matches", partial_cases())


if __name__ == "__main__":
    main()
