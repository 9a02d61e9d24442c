"""Issue 42.7: ``paxm dashboard --open`` never puts the run's token on the browser's command line.

The browser gets ``/login?code=…``: a one-time code that works once, expires after 60 s, and is
exchanged for the HttpOnly, SameSite=Strict session cookie.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, cast

import httpx
from _dashboard_helpers import start_dashboard, stop_dashboard, write_config
from starlette.testclient import TestClient

from paxm_core.dashboard.app import create_app
from paxm_core.dashboard.security import OneTimeCodes, cookie_name

FAKE_BROWSER = """#!{python}
import json, sys
# what every local user sees of this process: its command line
with open("/proc/self/cmdline", "rb") as f:
    argv = [part.decode() for part in f.read().split(b"\\0") if part]
with open({record!r}, "w") as f:
    json.dump(argv, f)
"""


def _browser(tmp_path: Path) -> tuple[Path, Path]:
    record = tmp_path / "browser-argv.json"
    script = tmp_path / "fake-browser"
    script.write_text(FAKE_BROWSER.format(python=sys.executable, record=str(record)))
    script.chmod(0o700)
    return script, record


def _wait_for(path: Path, timeout: float = 60) -> Any:
    stop = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert time.monotonic() < stop, f"the browser was never started ({path})"
        time.sleep(0.05)
    return json.loads(path.read_text())


def test_open_gives_the_browser_a_one_time_code_not_the_token(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg", previews=False)
    script, record = _browser(tmp_path)
    dashboard = start_dashboard(config, "--open", env={"BROWSER": str(script)})
    try:
        argv = _wait_for(record)
        assert not any(dashboard.token in part for part in argv), argv
        (url,) = [part for part in argv if "://" in part]
        assert url.startswith(f"{dashboard.base}/login?code=")
        code = url.split("code=", 1)[1]
        assert len(code) >= 43 and code != dashboard.token

        first = httpx.get(url, follow_redirects=False, timeout=30)
        assert first.status_code == 303 and first.headers["location"] == "/"
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"{cookie_name(dashboard.port)}={dashboard.token};")
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
        signed_in = httpx.get(
            dashboard.base + "/api/info", cookies={cookie_name(dashboard.port): dashboard.token}, timeout=30
        )
        assert signed_in.status_code == 200

        again = httpx.get(url, follow_redirects=False, timeout=30)  # the same code never works twice
        assert again.status_code == 401 and "set-cookie" not in again.headers
        assert "used or expired" in again.text
        forged = httpx.get(f"{dashboard.base}/login?code={dashboard.token}", follow_redirects=False, timeout=30)
        assert forged.status_code == 401  # nor does the token stand in for a code
        dashboard.process.send_signal(2)
        dashboard.process.wait(timeout=15)
        assert dashboard.process.stderr is not None
        assert "a browser signed in with the one-time login code" in dashboard.process.stderr.read()
    finally:
        stop_dashboard(dashboard)


def _app(codes: OneTimeCodes) -> TestClient:
    app = create_app(cast(Any, None), token="the-run-token", port=7465, codes=codes)
    return TestClient(app, base_url="http://127.0.0.1:7465", follow_redirects=False)


def test_a_code_works_once_and_an_expired_code_never() -> None:
    now = [1000.0]
    codes = OneTimeCodes(ttl=60, clock=lambda: now[0])
    client = _app(codes)
    fresh, stale = codes.issue(), codes.issue()

    ok = client.get("/login", params={"code": fresh})
    assert ok.status_code == 303 and ok.cookies.get(cookie_name(7465)) == "the-run-token"
    assert client.get("/login", params={"code": fresh}).status_code == 401

    now[0] += 60.5
    expired = client.get("/login", params={"code": stale})
    assert expired.status_code == 401 and "set-cookie" not in expired.headers
    now[0] -= 60.5  # a code that expired is gone for good, even if the clock were to go back
    assert client.get("/login", params={"code": stale}).status_code == 401

    for bad in ("", "x", "the-run-token"):
        assert client.get("/login", params={"code": bad}).status_code == 401
    assert client.get("/login").status_code == 401
    assert _app(OneTimeCodes()).get("/login", params={"code": fresh}).status_code == 401  # another run's codes


def test_login_still_needs_a_loopback_host() -> None:
    codes = OneTimeCodes()
    app = create_app(cast(Any, None), token="t", port=7465, codes=codes)
    client = TestClient(app, base_url="http://evil.example:7465", follow_redirects=False)
    assert client.get("/login", params={"code": codes.issue()}).status_code == 403
