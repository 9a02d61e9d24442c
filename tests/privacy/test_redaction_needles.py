"""The redactor skips a rule whose needles are absent, with exactly the eager rules' result.

Each credential rule is compiled the first time its needle (a literal every match holds)
appears in the text; a rule without one cannot match.  Compared here with every rule compiled
and run in order, on text built from the rules' own fragments, marks and random text.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.passive import _redact as R

_EAGER = [(name, re.compile(pattern, re.ASCII), keep) for name, pattern, keep in R._RULES]


def _reference(text: str) -> str:
    if not text:
        return text
    out = R._private().sub(R.PRIVATE_MARK, text) if "<private>" in text.lower() else text
    for name, pattern, keep in _EAGER:
        mark = f"[REDACTED:{name}]"
        out = pattern.sub((f"\\{keep}" + mark) if keep else mark, out)
    return out


_FRAGMENTS = st.sampled_from(
    [
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "AKIA",
        "ASIA",
        "AROA",
        "AIDA",
        "ABCDEFGHIJKLMNOP",
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "sk-",
        "sk-proj-",
        "eyJ",
        ".",
        "https://",
        "user:",
        "@host",
        "PassWord",
        "PASSWD",
        "pwd",
        "Secret",
        "client_secret",
        "TOKEN",
        "api-key",
        "ApiKey",
        "private_key_id",
        "=",
        ": ",
        '"',
        "'",
        '\\"',
        " ",
        "\n",
        "a1b2c3d4e5f6g7h8i9j0",
        "0123456789abcdefghij0123456789abcdefghij",
        "\u212aey",
        "\u0130",
        "é",
        "<private>",
        "</private>",
        "[REDACTED:api-key]",
    ]
)
_TEXT = st.lists(_FRAGMENTS | st.text(max_size=6), max_size=16).map("".join)


@settings(max_examples=1500, deadline=None)
@given(text=_TEXT)
def test_redaction_equals_the_eager_rules(text: str) -> None:
    assert R.redact(text) == _reference(text)


def test_every_rule_has_needles() -> None:
    assert len(R._NEEDLES) == len(R._RULES) == len(R._COMPILED)


def test_known_secrets_are_still_redacted() -> None:
    aws = "AKIA" + "ABCDEFGHIJKLMNOP"
    out = R.redact(f"key {aws} and password: hunter22 and https://bob:pw123@example.com")
    assert aws not in out and "hunter22" not in out and "pw123" not in out
    assert "[REDACTED:aws-key]" in out and "[REDACTED:assignment]" in out and "[REDACTED:url-password]" in out


def test_plain_text_compiles_no_rule() -> None:
    code = (
        "import json; from paxm_core.passive import _redact as R;"
        " R.redact('what was the canary rollout decision number 4242?');"
        " plain = sum(p is not None for p in R._COMPILED);"
        " R.redact('token=abcdef123'); after = sum(p is not None for p in R._COMPILED);"
        " print(json.dumps([plain, after]))"
    )
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, 1]


def test_text_without_needles_never_imports_re() -> None:
    """The hook client loads the redactor by path in a bare ``-I -S`` interpreter; for text that
    holds no rule's needle nor ``<private>``, ``re`` (with ``enum``, ``functools``, ...) must not load,
    and a text that does hold one still gets redacted."""
    code = (
        "import sys, _frozen_importlib, _frozen_importlib_external as E;"
        f" spec = E.spec_from_file_location('paxm_redact', {R.__file__!r});"
        " m = _frozen_importlib.module_from_spec(spec); spec.loader.exec_module(m);"
        ' out = m.redact_bytes(b\'{"prompt": "what did we decide about the canary rollout?"}\');'
        " plain = 're' in sys.modules;"
        " hidden = m.redact_bytes(b'a <private>x</private> b password=hunter22');"
        " print(plain, 're' in sys.modules, out.decode(), hidden.decode())"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    plain, after, *rest = out.stdout.split(" ", 2)
    assert (plain, after) == ("False", "True")
    assert "canary rollout" in rest[0]
    assert "hunter22" not in rest[0] and "x</private>" not in rest[0] and "[private]" in rest[0]
