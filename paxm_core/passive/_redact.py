"""Redact credentials and ``<private>`` text before anything is queued or stored.

Standard library only and no paxm imports: the hook client loads this file by path.  ``re`` is
imported (and a rule compiled) only when a text holds one of the rule's needles.  Replacements
contain no quote or backslash, so redacted JSON text stays valid and redacting twice changes
nothing.
"""

TYPE_CHECKING = False  # not ``typing``'s: importing ``typing`` imports ``re``
if TYPE_CHECKING:
    import re

__all__ = ["PRIVATE_MARK", "compile_extra", "redact", "redact_bytes"]

PRIVATE_MARK = "[private]"

#: (name, pattern, group kept before the secret or 0).  Order matters: blocks before tokens.
_RULES: list[tuple[str, str, int]] = [
    # PEM private keys (GCP service-account JSON carries one in "private_key"), plain or JSON-escaped
    (
        "private-key",
        r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----[\s\S]{0,20000}?-----END ([A-Z0-9]+ )*PRIVATE KEY-----",
        0,
    ),
    ("aws-key", r"\b(?:AKIA|ASIA|AROA|AIDA)[0-9A-Z]{16}\b", 0),
    ("github-token", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b", 0),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", 0),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,255}", 0),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,255}", 0),
    ("api-key", r"\bsk-(?:[a-z]{2,8}-)?[A-Za-z0-9_-]{20,255}", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
    # scheme://user:password@host -> keep user and host
    ("url-password", r"\b([a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@\"'\\]{1,256}:)[^\s@/\"'\\]{1,256}(?=@)", 1),
    # password=..., "token": "...", api_key: ... (also inside JSON-escaped strings)
    (
        "assignment",
        r"(?i)(\b(?:password|passwd|pwd|passphrase|secret|client_secret|token|access_token|auth_token|"
        r"refresh_token|api_key|apikey|api-key|secret_key|access_key|aws_secret_access_key|private_key_id)"
        r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?)(?![\[<])[^\s\"'\\&,;<>\[\]{}]{3,}",
        1,
    ),
]
#: Per rule (same order): substrings every match contains, and whether they are looked for in
#: the lowercased text.  A rule with none of its needles in the text is neither run nor compiled.
_NEEDLES: list[tuple[tuple[str, ...], bool]] = [
    (("PRIVATE KEY-----",), False),
    (("AKIA", "ASIA", "AROA", "AIDA"), False),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), False),
    (("github_pat_",), False),
    (("glpat-",), False),
    (("xox",), False),
    (("sk-",), False),
    (("eyJ",), False),
    (("://",), False),
    (
        (
            "pwd",
            "passwd",
            "password",
            "passphrase",
            "secret",
            "token",
            "api_key",
            "apikey",
            "api-key",
            "access_key",
            "private_key_id",
        ),
        True,
    ),
]
_PRIVATE_PATTERN = r"<private>[\s\S]*?</private>|<private>[\s\S]*\Z"
#: the ``<private>`` pattern once a text held the tag (``None`` before)
_PRIVATE: "re.Pattern[str] | None" = None
#: each rule's pattern once it was first needed (``None`` before)
_COMPILED: "list[re.Pattern[str] | None]" = [None] * len(_RULES)


def _pattern(index: int) -> "re.Pattern[str]":
    pattern = _COMPILED[index]
    if pattern is None:  # a race compiles twice, harmlessly
        import re

        pattern = _COMPILED[index] = re.compile(_RULES[index][1], re.ASCII)
    return pattern


def _private() -> "re.Pattern[str]":
    global _PRIVATE
    if _PRIVATE is None:
        import re

        _PRIVATE = re.compile(_PRIVATE_PATTERN, re.IGNORECASE)
    return _PRIVATE


def compile_extra(patterns: "list[str] | tuple[str, ...]") -> "tuple[re.Pattern[str], ...]":
    """``privacy.redact_patterns`` compiled (``re`` caches compiled patterns itself)."""
    import re

    return tuple(re.compile(p) for p in patterns)


def redact(text: str, extra: "list[re.Pattern[str]] | tuple[re.Pattern[str], ...]" = ()) -> str:
    """``text`` with ``<private>`` spans removed and every known credential replaced.

    :param extra: compiled user patterns (``privacy.redact_patterns``); a match becomes
        ``[REDACTED]``.
    """
    if not text:
        return text
    out = _private().sub(PRIVATE_MARK, text) if "<private>" in text.lower() else text
    for index, (name, _, keep) in enumerate(_RULES):
        needles, folded = _NEEDLES[index]
        hay = out.lower() if folded else out  # this rule's text: earlier marks included
        if not any(needle in hay for needle in needles):
            continue  # no match possible
        mark = f"[REDACTED:{name}]"  # no backslash: safe as a replacement template
        out = _pattern(index).sub((f"\\{keep}" + mark) if keep else mark, out)
    for pattern in extra:
        out = pattern.sub("[REDACTED]", out)
    return out


def redact_bytes(raw: bytes) -> bytes:
    """:func:`redact` for a UTF-8 payload (invalid bytes are kept as they are)."""
    text = raw.decode("utf-8", "surrogateescape")
    return redact(text).encode("utf-8", "surrogateescape")
