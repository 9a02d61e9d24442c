"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (stdlib only).

Chromium reads NUL-terminated JSON commands on fd 3 and writes responses and events on fd 4;
no port is opened, so nothing else on the machine can drive the browser.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """The Debian ``chromium`` binary, if installed."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _high_fd(fd: int) -> int:
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class CDPError(RuntimeError):
    """A command answered with an error, or the browser went away."""


class Browser:
    """One headless Chromium with a fresh profile, driven over the pipe."""

    def __init__(self, executable: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="paxm-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        to_chrome_r, from_chrome_w = _high_fd(to_chrome_r), _high_fd(from_chrome_w)  # never 3 or 4

        # A tiny Python trampoline moves the pipe ends to fds 3 and 4, then execs Chromium
        # (no preexec_fn: it is unsafe in a threaded process; dash cannot name fds above 9).
        wire = (
            "import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); os.dup2(r, 3); os.dup2(w, 4);"
            " os.close(r); os.close(w); os.execv(sys.argv[3], sys.argv[3:])"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", wire, str(to_chrome_r), str(from_chrome_w), executable]
            + [*CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_chrome_r, from_chrome_w),
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._responses: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._closed = True
                    self._cond.notify_all()
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self._cond:
                    if "id" in message:
                        self._responses[message["id"]] = message
                    else:
                        self.events.append(message)
                    self._cond.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None) -> Any:
        """Send a command and wait (30 s) for its result."""
        with self._cond:
            self._next_id += 1
            ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 30
        with self._cond:
            while ident not in self._responses:
                if self._closed:
                    raise CDPError(f"browser closed during {method}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CDPError(f"{method}: no answer in 30 s")
                self._cond.wait(left)
            answer = self._responses.pop(ident)
        if "error" in answer:
            raise CDPError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def new_page(self, width: int = 1280, height: int = 900) -> Page:
        """Open a tab and attach to it."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page

    def close(self) -> None:
        """Close the browser and remove its profile."""
        try:
            self.send("Browser.close")
        except CDPError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self._reader.join(timeout=5)
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """One attached tab."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.browser.send(method, params, session=self.session)

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        """Evaluate JS in the page and return its value (promises awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise CDPError(f"JS error: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        """Poll a JS expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression!r}; errors: {self.errors()}")
            time.sleep(0.1)

    def wait_ready(self, view: str, timeout: float = 20.0) -> None:
        """Wait until the page has rendered ``view`` (``data-ready`` on ``#view``)."""
        self.wait_for(
            f"document.getElementById('view') && document.getElementById('view').dataset.ready === {json.dumps(view)}",
            timeout,
        )

    def count(self, selector: str) -> int:
        return int(self.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length"))

    def text(self, selector: str) -> str:
        return str(self.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''"))

    def click(self, selector: str) -> None:
        """A real mouse click at the element's centre (scrolled into view first)."""
        box = self.evaluate(
            f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
                 if (!el) return null; el.scrollIntoView({{block: 'center'}});
                 const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"""
        )
        if not box:
            raise AssertionError(f"no element {selector!r}")
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def choose(self, selector: str, value: str) -> None:
        """Pick an option of a <select> as a user does (focus, change value, fire ``change``)."""
        ok = self.evaluate(
            f"""(() => {{ const el = document.querySelector({json.dumps(selector)}); if (!el) return false;
                 el.focus(); el.value = {json.dumps(value)}; el.dispatchEvent(new Event('change', {{bubbles: true}}));
                 return el.value === {json.dumps(value)}; }})()"""
        )
        if not ok:
            raise AssertionError(f"cannot choose {value!r} in {selector!r}")

    def type(self, selector: str, text: str, *, enter: bool = True) -> None:
        """Focus an input, type ``text`` with keyboard input, then press Enter."""
        self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); el.focus(); el.select(); }})()"
        )
        self.send("Input.insertText", {"text": text})
        if enter:
            for kind in ("keyDown", "keyUp"):
                self.send(
                    "Input.dispatchKeyEvent",
                    {
                        "type": kind,
                        "key": "Enter",
                        "code": "Enter",
                        "windowsVirtualKeyCode": 13,
                        "text": "\r" if kind == "keyDown" else "",
                    },
                )

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (not only the viewport), saved to ``path``."""
        metrics = self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": 1280, "height": min(int(size["height"]) + 1, 4000), "scale": 1}
        data = base64.b64decode(
            self.send("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})["data"]
        )
        path.write_bytes(data)
        return data

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and CSP violations seen so far."""
        out = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(str(params.get("exceptionDetails", {}).get("exception", {}).get("description", params)))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(str(params["entry"].get("text")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append(str([a.get("value") for a in params.get("args", [])]))
        return out
