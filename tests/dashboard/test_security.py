"""The address, Host and token rules on their own (the server-level checks are in test_api.py)."""

from __future__ import annotations

import pytest

from paxm_core.api.errors import UsageError
from paxm_core.dashboard.security import allowed_hosts, cookie_name, new_token, parse_addr, tokens_match


@pytest.mark.parametrize(
    ("addr", "host", "port"),
    [
        ("127.0.0.1:7465", "127.0.0.1", 7465),
        ("127.0.0.2:80", "127.0.0.2", 80),
        ("localhost:0", "localhost", 0),
        ("LocalHost:9", "localhost", 9),
        ("[::1]:7465", "::1", 7465),
        (" 127.0.0.1:1 ", "127.0.0.1", 1),
    ],
)
def test_loopback_addresses_are_accepted(addr: str, host: str, port: int) -> None:
    parsed = parse_addr(addr)
    assert (parsed.host, parsed.port) == (host, port)


@pytest.mark.parametrize(
    ("addr", "reason"),
    [
        ("0.0.0.0:7465", "not a loopback address"),
        ("10.1.2.3:7465", "not a loopback address"),
        ("[::]:7465", "not a loopback address"),
        ("[::ffff:8.8.8.8]:1", "not a loopback address"),
        ("example.com:80", "not a loopback address"),
        ("localhost.example.com:80", "not a loopback address"),
        (":7465", "every interface"),
        ("127.0.0.1", "HOST:PORT"),
        ("127.0.0.1:http", "not a number"),
        ("127.0.0.1:65536", "0-65535"),
        ("[::1]7465", "HOST:PORT"),
    ],
)
def test_other_addresses_are_refused_with_the_reason(addr: str, reason: str) -> None:
    with pytest.raises(UsageError, match=reason):
        parse_addr(addr)


def test_allowed_hosts_are_loopback_names_with_the_port() -> None:
    assert allowed_hosts(7465) == {"localhost:7465", "127.0.0.1:7465", "[::1]:7465"}


def test_tokens() -> None:
    token = new_token()
    assert len(token) >= 43 and token != new_token()
    assert tokens_match(token, token)
    assert not tokens_match(None, token) and not tokens_match("", token) and not tokens_match(token[:-1], token)
    assert not tokens_match("é" + token, token)
    assert cookie_name(7465) != cookie_name(7466)
