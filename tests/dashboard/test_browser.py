"""A real headless Chromium drives the dashboard page over a store with generated activity.

Each view is loaded, its filters used, a session timeline opened and a dead delivery retried
with the page's button; screenshots are taken and the page is checked through DOM queries over
the DevTools protocol.  No console error, uncaught exception or CSP violation is allowed.

``PAXM_DASHBOARD_SCREENSHOTS=DIR`` keeps the screenshots in DIR; ``PAXM_UPDATE_DOCS_SCREENSHOT=1``
refreshes ``docs/images/dashboard-overview.png``.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _dashboard_helpers import ROOT, Dashboard, Store, generate_activity, paxm, start_dashboard, stop_dashboard

from tests._kit import load_module

cdp = load_module("_dashboard_cdp", Path(__file__).with_name("_cdp.py"), register=True)

DOCS_IMAGE = ROOT / "docs" / "images" / "dashboard-overview.png"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """Today's activity through the real runtime, plus a week of earlier recalls and writes."""
    return generate_activity(tmp_path_factory.mktemp("dash-browser") / "cfg", past_days=6)


@pytest.fixture(scope="module")
def dashboard(store: Store) -> Iterator[Dashboard]:
    server = start_dashboard(store.config)
    yield server
    stop_dashboard(server)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = cdp.find_chromium()
    if executable is None:
        message = "chromium is not installed (Debian: apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    instance = cdp.Browser(executable)
    yield instance
    instance.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    keep = os.environ.get("PAXM_DASHBOARD_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return Path(keep)
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def page(browser: Any, dashboard: Dashboard) -> Any:
    tab = browser.new_page()
    tab.navigate(dashboard.url)  # the token URL: swapped for a cookie, then redirected to /
    tab.wait_ready("overview")
    return tab


def png_facts(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct byte values in the pixel data): a blank page has very few."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def check_screenshot(tab: Any, path: Path) -> None:
    text = tab.evaluate("document.getElementById('view').innerText")
    for junk in ("[object ", "undefined", "NaN", "null"):
        assert junk not in text, f"{junk!r} rendered in {path.name}"
    data = tab.screenshot(path)
    width, height, distinct = png_facts(data)
    assert width == 1280 and height >= 400, (width, height)
    assert distinct > 40, f"{path.name} looks blank"


def show(tab: Any, view: str, ready: str | None = None) -> None:
    tab.evaluate(f"location.hash = {json.dumps('#' + view)}")
    tab.wait_ready(ready or view)


def test_token_url_lands_on_the_overview_without_the_token(page: Any, dashboard: Dashboard) -> None:
    assert page.evaluate("location.href") == dashboard.base + "/"
    assert page.evaluate("document.cookie") == ""  # HttpOnly: not readable


def test_overview(page: Any, dashboard: Dashboard, store: Store, shots: Path) -> None:
    show(page, "overview")
    summary = dashboard.get("/api/summary").json()
    totals = summary["totals"]
    assert page.text('[data-card="Recalls"] .value') == str(totals["recalls"])
    assert page.text('[data-card="Writes"] .value') == str(totals["writes"])
    assert page.text('[data-card="Errors"] .value') == str(totals["errors"])
    bars = page.evaluate(
        "[...document.querySelectorAll('#daily-chart rect.bar')]"
        ".map(r => [r.dataset.series, r.dataset.date, +r.dataset.value])"
    )
    today = summary["daily"][-1]
    for day in summary["daily"]:  # every stored day is drawn with its own numbers
        for series in ("recalls", "writes", "hits", "errors"):
            assert [series, day["date"], day["counter"].get(series, 0)] in bars
    assert len(summary["daily"]) == 7 and today["counter"]["recalls"] >= 5
    assert len({b[1] for b in bars}) == 7  # one slot per day of the window
    assert page.count('#by-agent .hbar[data-name="codex"]') == 1
    assert page.count('#by-provider tr[data-provider="sqlite"]') == 1
    assert str(store.directory / "state") in page.text("#storage")
    assert "query previews on" in page.text("#privacy")
    check_screenshot(page, shots / "overview.png")
    if os.environ.get("PAXM_UPDATE_DOCS_SCREENSHOT"):
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 860, "deviceScaleFactor": 1, "mobile": False},
        )
        DOCS_IMAGE.parent.mkdir(parents=True, exist_ok=True)
        data = page.send("Page.captureScreenshot", {"format": "png"})["data"]
        import base64

        DOCS_IMAGE.write_bytes(base64.b64decode(data))
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )
    # the window selector reloads with a new number of days
    page.choose('select[name="days"]', "14")
    page.wait_for("document.querySelector('#view h2').textContent === 'Last 14 days'")
    assert (
        len(
            {
                d
                for d in page.evaluate(
                    "[...document.querySelectorAll('#daily-chart rect.bar')].map(r => r.dataset.date)"
                )
            }
        )
        == 14
    )
    assert page.errors() == []


def rows(tab: Any, selector: str) -> list[dict[str, str]]:
    return list(
        tab.evaluate(
            f"[...document.querySelectorAll({json.dumps(selector)})].map(r => ({{...r.dataset, text: r.textContent}}))"
        )
    )


def wait_rows(tab: Any, selector: str, count: int) -> list[dict[str, str]]:
    tab.wait_for(f"document.querySelectorAll({json.dumps(selector)}).length === {count}")
    return rows(tab, selector)


def test_recalls_filters_and_details(page: Any, dashboard: Dashboard, shots: Path) -> None:
    show(page, "recalls")
    total = dashboard.get("/api/events", params={"kind": "recall,hook_recall"}).json()["total"]
    assert len(rows(page, "tr.recall-row")) == min(total, 25)
    assert page.text(".page-info") == f"1–{min(total, 25)} of {total}"
    page.choose('#recall-filters select[name="mode"]', "passive")
    passive = wait_rows(page, "tr.recall-row", 2)
    assert {r["mode"] for r in passive} == {"passive"}
    page.choose('#recall-filters select[name="mode"]', "mcp")
    (mcp,) = wait_rows(page, "tr.recall-row", 1)
    assert mcp["mode"] == "mcp" and "postgres security for billing" in mcp["text"]
    page.choose('#recall-filters select[name="mode"]', "active")
    active_total = dashboard.get("/api/events", params={"kind": "recall,hook_recall", "mode": "active"}).json()
    active = wait_rows(page, "tr.recall-row", min(active_total["total"], 25))
    assert {r["mode"] for r in active} == {"active"}
    page.choose('#recall-filters select[name="state"]', "error")
    (error,) = wait_rows(page, "tr.recall-row", 1)
    assert error["state"] == "error" and "no-such-profile" in error["text"]
    page.choose('#recall-filters select[name="state"]', "")
    wait_rows(page, "tr.recall-row", min(active_total["total"], 25))
    page.type('#recall-filters input[name="q"]', "deploy")
    (deploy,) = wait_rows(page, "tr.recall-row", 1)
    assert "when does billing deploy" in deploy["text"]
    page.click("tr.recall-row")
    page.wait_for("!document.querySelector('tr.detail').hidden")
    assert "Tuesdays" in page.text("tr.detail table.hits")
    page.type('#recall-filters input[name="q"]', "")
    page.choose('#recall-filters select[name="mode"]', "all")
    wait_rows(page, "tr.recall-row", min(total, 25))
    page.choose('#recall-filters select[name="hit_provider"]', "sqlite")
    with_hits = dashboard.get("/api/events", params={"kind": "recall,hook_recall", "hit_provider": "sqlite"}).json()
    wait_rows(page, "tr.recall-row", min(with_hits["total"], 25))
    page.type('#recall-filters input[name="hit_q"]', "tuesdays")
    jet = dashboard.get("/api/events", params={"kind": "recall,hook_recall", "hit_q": "tuesdays"}).json()["total"]
    assert jet >= 1
    wait_rows(page, "tr.recall-row", jet)
    check_screenshot(page, shots / "recalls.png")
    assert page.errors() == []


def test_sessions_and_timeline(page: Any, shots: Path) -> None:
    show(page, "sessions")
    sessions = wait_rows(page, "tr.session-row", 2)
    assert {s["key"].rsplit("/", 1)[-1] for s in sessions} == {"sess-billing", "sess-ingest"}
    billing = next(i for i, s in enumerate(sessions) if s["key"].endswith("sess-billing"))
    page.click(f"tr.session-row:nth-child({billing + 1})")
    page.wait_ready("sessions:session")
    timeline = page.text("#timeline")
    assert page.count("#timeline li") >= 3  # episode + two deliveries
    assert "sess-billing" in page.text("#view h2")
    assert "→ sqlite" in timeline and "→ broken" in timeline and "dead" in timeline and "delivered" in timeline
    assert page.count("#timeline li.episode") >= 1
    check_screenshot(page, shots / "session-timeline.png")
    page.click(".breadcrumb a")
    page.wait_ready("sessions")
    assert page.errors() == []


def test_logs_kind_filter_and_paging(page: Any, dashboard: Dashboard, shots: Path) -> None:
    show(page, "logs")
    total = dashboard.get("/api/events").json()["total"]
    assert total > 10
    page.choose('#log-filters select[name="size"]', "10")
    first = wait_rows(page, "tr.log-row", 10)
    assert page.text(".page-info") == f"1–10 of {total}"
    page.click(".pager button.next")
    page.wait_for(f"document.querySelector('.page-info').textContent === '11–{min(20, total)} of {total}'")
    second = rows(page, "tr.log-row")
    assert [r["text"] for r in second] != [r["text"] for r in first]
    page.click(".pager button.prev")
    page.wait_for(f"document.querySelector('.page-info').textContent === '1–10 of {total}'")
    page.choose('#log-filters select[name="kind"]', "hook_delivery")
    deliveries = dashboard.get("/api/events", params={"kind": "hook_delivery"}).json()["total"]
    shown = wait_rows(page, "tr.log-row", min(deliveries, 10))
    assert {r["kind"] for r in shown} == {"hook_delivery"}
    check_screenshot(page, shots / "logs.png")
    assert page.errors() == []


def test_injections_view(page: Any, dashboard: Dashboard, shots: Path) -> None:
    show(page, "injections")
    data = dashboard.get("/api/injections").json()
    assert data["total"] >= 1
    shown = wait_rows(page, "tr.injection-row", min(data["total"], 100))
    assert shown[0]["text"].count("prompt")
    memories = [r["text"] for r in rows(page, "tr.injection-memory")]
    assert any("rank 1" in t and "sqlite:" in t and "terms:" in t and "billing" in t for t in memories), memories
    check_screenshot(page, shots / "injections.png")
    assert page.errors() == []


def test_memory_browser(page: Any, shots: Path) -> None:
    show(page, "memories")
    page.type('#memory-form input[name="q"]', "queue library")
    page.wait_for("document.querySelectorAll('#memory-results article.memory').length > 0")
    texts = [r["text"] for r in rows(page, "#memory-results article.memory")]
    assert any("NATS JetStream" in t for t in texts), texts
    check_screenshot(page, shots / "memories.png")
    assert page.errors() == []


def test_queue_retry_button_revives_dead_deliveries(page: Any, dashboard: Dashboard, store: Store, shots: Path) -> None:
    # Last in the module: it changes the queue the other views read.
    show(page, "queue")
    before = dashboard.get("/api/queue").json()["status"]["deliveries"]
    dead = before["dead"]
    assert dead >= 2
    assert page.text('[data-card="Dead"] .value') == str(dead)
    assert page.count("tr.dead-row") == dead
    page.choose('#deliveries select[name="state"]', "delivered")
    delivered = wait_rows(page, "tr.delivery-row", before["delivered"])
    assert {r["state"] for r in delivered} == {"delivered"}
    page.choose('#deliveries select[name="state"]', "")
    wait_rows(page, "tr.delivery-row", sum(before.values()))
    check_screenshot(page, shots / "queue-before-retry.png")
    page.click("#retry-dead")
    page.wait_for("document.getElementById('flash') !== null")
    assert page.text("#flash").startswith(f"Revived {dead} dead deliveries")
    assert page.text('[data-card="Dead"] .value') == "0"
    assert page.count("tr.dead-row") == 0
    assert page.evaluate("document.getElementById('retry-dead').disabled") is True
    cli = json.loads(paxm(store.config, "queue", "status", "--json").stdout)
    assert cli["deliveries"].get("dead", 0) == 0 and cli["deliveries"]["retry"] == dead
    check_screenshot(page, shots / "queue-after-retry.png")
    assert page.errors() == []


def test_page_without_token_is_refused(browser: Any, dashboard: Dashboard) -> None:
    # Last: forgetting the cookie logs every tab of this browser out.
    tab = browser.new_page()
    tab.send("Network.enable")
    tab.send("Network.clearBrowserCookies")
    tab.navigate(dashboard.base + "/#overview")
    tab.wait_for("document.readyState === 'complete' && document.body !== null")
    assert "open the URL printed by 'paxm dashboard'" in tab.evaluate("document.body.textContent")
    assert tab.count("#view") == 0
