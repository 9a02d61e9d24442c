"""The dashboard's JSON API over a real server and a store filled through the real runtime."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import httpx
import pytest
from _dashboard_helpers import Dashboard, Store, generate_activity, paxm, start_dashboard, stop_dashboard, write_config


def test_summary_matches_paxm_history(dashboard: Dashboard, store: Store) -> None:
    response = dashboard.get("/api/summary", params={"days": "7"})
    assert response.status_code == 200
    data = response.json()
    history = json.loads(paxm(store.config, "history", "--days", "7", "--json").stdout)
    assert data["totals"] == history["totals"]
    assert data["daily"] == history["daily"]
    assert data["totals"]["recalls"] >= 4 and data["totals"]["writes"] >= 3 and data["totals"]["errors"] >= 1
    assert [a["name"] for a in data["agents"]] == ["codex"]
    providers = {p["name"]: p for p in data["providers"]}
    assert providers["sqlite"]["counter"]["hits"] >= 1 and providers["sqlite"]["recall_p95_ms"] > 0
    assert providers["sqlite"]["counter"]["provider_write_samples"] >= 2  # the delivered episodes
    assert data["storage"]["event_bytes"] > 0


def test_summary_default_days_and_bad_days(dashboard: Dashboard) -> None:
    assert dashboard.get("/api/summary").json()["days"] == 7
    for bad in ("seven", "1.5", "100001"):
        response = dashboard.get("/api/summary", params={"days": bad})
        assert response.status_code == 400 and "days" in response.json()["error"]


def test_events_newest_first_paged_and_matching_logs(dashboard: Dashboard, store: Store) -> None:
    logged = [json.loads(line) for line in paxm(store.config, "logs", "--json", "--tail", "1000").stdout.splitlines()]
    first = dashboard.get("/api/events", params={"limit": "3"}).json()
    assert first["total"] == len(logged) and first["limit"] == 3 and first["offset"] == 0
    assert [e["time"] for e in first["events"]] == [e["time"] for e in reversed(logged)][:3]
    second = dashboard.get("/api/events", params={"limit": "3", "offset": "3"}).json()
    assert [e["time"] for e in second["events"]] == [e["time"] for e in reversed(logged)][3:6]
    beyond = dashboard.get("/api/events", params={"offset": str(len(logged))}).json()
    assert beyond["events"] == [] and beyond["total"] == len(logged)


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "x"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"state": "broken"}, "state"),
        ({"mode": "sideways"}, "mode"),
    ],
)
def test_events_bad_parameters_are_400(dashboard: Dashboard, params: dict[str, str], needle: str) -> None:
    response = dashboard.get("/api/events", params=params)
    assert response.status_code == 400
    assert needle in response.json()["error"]


def test_event_filters(dashboard: Dashboard) -> None:
    def events(**params: str) -> list[dict[str, object]]:
        data = dashboard.get("/api/events", params={"limit": "500", **params}).json()
        assert data["total"] == len(data["events"])
        return list(data["events"])

    kinds = {e["kind"] for e in events(kind="recall,hook_recall")}
    assert kinds == {"recall", "hook_recall"}
    assert {e["kind"] for e in events(kind="hook_delivery")} == {"hook_delivery"}
    active = events(kind="recall,hook_recall", mode="active")
    passive = events(kind="recall,hook_recall", mode="passive")
    assert len(active) == 3 and all(e["source"] == "cli" and e["mode"] == "active" for e in active)
    assert len(passive) == 2 and all(e["kind"] == "hook_recall" for e in passive)
    (mcp,) = events(kind="recall,hook_recall", mode="mcp")
    assert mcp["source"] == "mcp" and mcp["query_preview"] == "postgres security for billing"
    errors = events(state="error")
    assert errors and all(not e["success"] for e in errors)
    assert any(e.get("profile") == "no-such-profile" for e in errors)
    assert all(e["state"] == "success" for e in events(state="success"))
    assert {e["profile"] for e in events(profile="stm")} == {"stm"}
    billing = events(q="BILLING")  # case-insensitive preview search
    assert billing and all("billing" in str(e["query_preview"]).lower() for e in billing)
    digest = str(billing[0]["query_hash"])
    assert [e["query_hash"] for e in events(q=digest[:8])] == [digest] * len(events(q=digest[:8]))
    with_hits = events(hit_provider="sqlite")
    assert with_hits and all(any(h["provider"] == "sqlite" for h in e["recall_hits"]) for e in with_hits)
    assert events(hit_provider="nobody") == []
    tuesday = events(hit_q="tuesdays")
    assert tuesday and all(any("Tuesdays" in h.get("text_preview", "") for h in e["recall_hits"]) for e in tuesday)
    assert events(hit_q="no memory says this") == []
    source = events(source="capture_queue")
    assert source and {e["kind"] for e in source} == {"hook_delivery"}


def test_facets_list_what_was_seen(dashboard: Dashboard) -> None:
    facets = dashboard.get("/api/facets").json()
    assert {"recall", "hook_recall", "remember", "hook_write", "hook_delivery"} <= set(facets["kinds"])
    assert {"cli", "hook", "capture_queue"} <= set(facets["sources"])
    assert "sqlite" in facets["hit_providers"] and "stm" in facets["profiles"]


def test_sessions_group_by_capture_session(dashboard: Dashboard) -> None:
    sessions = dashboard.get("/api/sessions").json()["sessions"]
    by_id = {s["key"].rsplit("/session/", 1)[-1]: s for s in sessions}
    assert set(by_id) == {"sess-billing", "sess-ingest"}
    billing = by_id["sess-billing"]
    assert billing["target"] == "codex" and billing["episodes"] >= 1
    assert billing["deliveries"] >= 2 and billing["failed_deliveries"] >= 1
    assert billing["first_seen"] <= billing["last_seen"]
    assert sessions == sorted(sessions, key=lambda s: s["last_seen"], reverse=True)


def test_session_timeline(dashboard: Dashboard) -> None:
    key = next(s["key"] for s in dashboard.get("/api/sessions").json()["sessions"] if s["key"].endswith("sess-ingest"))
    data = dashboard.get("/api/session", params={"key": key}).json()
    assert data["key"] == key and data["target"] == "codex"
    times = [e["time"] for e in data["events"]]
    assert times == sorted(times) and {e["kind"] for e in data["events"]} == {"hook_delivery"}
    (episode,) = data["episodes"]
    assert episode["event_count"] >= 1 and episode["state"] == "dead"
    assert {d["provider"]: d["state"] for d in episode["deliveries"]} == {"sqlite": "delivered", "broken": "dead"}
    assert "text" not in json.dumps(episode).replace("event_count", "")  # captured text is never shown
    assert dashboard.get("/api/session").status_code == 400
    missing = dashboard.get("/api/session", params={"key": "codex/workspace//x/session/none"})
    assert missing.status_code == 404 and "no session" in missing.json()["error"]


def test_queue_status_and_deliveries(dashboard: Dashboard, store: Store) -> None:
    data = dashboard.get("/api/queue").json()
    cli = json.loads(paxm(store.config, "queue", "status", "--json").stdout)
    assert data["status"]["deliveries"] == cli["deliveries"]
    assert data["status"]["dead_deliveries"] == cli["dead_deliveries"]
    assert data["total"] == sum(cli["deliveries"].values())
    dead = dashboard.get("/api/queue", params={"state": "dead"}).json()
    assert dead["total"] == cli["deliveries"]["dead"]
    assert {d["provider"] for d in dead["deliveries"]} == {"broken"}
    assert all("no-such-cmd" in d["last_error"] for d in dead["deliveries"])
    page = dashboard.get("/api/queue", params={"limit": "1", "offset": "1"}).json()
    assert len(page["deliveries"]) == 1 and page["offset"] == 1
    assert dashboard.get("/api/queue", params={"provider": "sqlite"}).json()["total"] == cli["deliveries"]["delivered"]
    assert dashboard.get("/api/queue", params={"state": "lost"}).status_code == 400
    assert dashboard.get("/api/queue", params={"limit": "none"}).status_code == 400


def test_memory_browser_searches_through_the_router_without_recording_a_recall(
    dashboard: Dashboard, store: Store
) -> None:
    before = dashboard.get("/api/events", params={"kind": "recall"}).json()["total"]
    data = dashboard.get("/api/memories", params={"q": "billing deploy"}).json()
    texts = [h["text"] for h in data["hits"]]
    assert any("deploys on Tuesdays" in t for t in texts), texts
    assert all(h["provider"] == "sqlite" for h in data["hits"]) and data["profile"] == "default"
    limited = dashboard.get("/api/memories", params={"q": "billing", "limit": "1"}).json()
    assert len(limited["hits"]) == 1
    assert dashboard.get("/api/events", params={"kind": "recall"}).json()["total"] == before
    assert dashboard.get("/api/memories").status_code == 400
    unknown = dashboard.get("/api/memories", params={"q": "billing", "profile": "nope"})
    assert unknown.status_code == 400 and "nope" in unknown.json()["error"]
    assert dashboard.get("/api/memories", params={"q": "x", "limit": "101"}).status_code == 400


def test_info(dashboard: Dashboard, store: Store) -> None:
    info = dashboard.get("/api/info").json()
    assert info["config_path"] == str(store.config) and info["query_previews"] is True
    assert info["queue_path"] == str(store.directory / "hooks" / "capture.sqlite")
    assert "default" in info["recall_profiles"]


# -- security ---------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1", "127.0.0.1:1", "10.0.0.1:{port}"])
def test_foreign_host_is_refused(dashboard: Dashboard, host: str) -> None:
    host = host.format(port=dashboard.port)
    for path in ("/api/summary", "/", "/static/app.js"):
        response = dashboard.get(path, headers={"host": host})
        assert response.status_code == 403, (path, host)
        assert "forbidden Host" in response.json()["error"]
    assert dashboard.post("/api/queue/retry", headers={"host": host}).status_code == 403


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_loopback_names_with_our_port_are_served(dashboard: Dashboard, host: str) -> None:
    response = dashboard.get("/api/info", headers={"host": host.format(port=dashboard.port)})
    assert response.status_code == 200


def test_missing_or_wrong_token_is_refused(dashboard: Dashboard) -> None:
    for path in ("/api/summary", "/api/events", "/api/sessions", "/api/queue", "/api/memories?q=billing"):
        assert httpx.get(dashboard.base + path).status_code == 401
        wrong = httpx.get(dashboard.base + path, headers={"x-paxm-token": dashboard.token[:-1] + "x"})
        assert wrong.status_code == 401 and "token" in wrong.json()["error"]
    page = httpx.get(dashboard.base + "/")
    assert page.status_code == 401 and "paxm dashboard" in page.text and dashboard.token not in page.text
    assert httpx.get(dashboard.base + "/static/app.js").status_code == 401
    assert httpx.get(dashboard.base + "/?token=wrong").status_code == 401


def test_token_in_url_becomes_a_strict_httponly_cookie(dashboard: Dashboard) -> None:
    first = httpx.get(dashboard.url)
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"paxm_dashboard_{dashboard.port}={dashboard.token};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    with httpx.Client(base_url=dashboard.base, follow_redirects=True) as client:
        page = client.get(f"/?token={dashboard.token}")
        assert page.status_code == 200 and str(page.url) == dashboard.base + "/"
        assert 'name="paxm-token"' in page.text
        assert client.get("/api/summary").status_code == 200  # the cookie alone reads
        assert client.post("/api/queue/retry").status_code == 401  # ...but never changes anything
    headers = first.headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer" and headers["x-frame-options"] == "DENY"


def test_retry_is_post_only(dashboard: Dashboard) -> None:
    response = dashboard.get("/api/queue/retry")
    assert response.status_code == 405 and "GET" in response.json()["error"]
    for method in ("PUT", "DELETE"):
        assert httpx.request(method, dashboard.base + "/api/summary").status_code == 401
        assert (
            httpx.request(
                method, dashboard.base + "/api/summary", headers={"x-paxm-token": dashboard.token}
            ).status_code
            == 405
        )
    assert httpx.post(dashboard.base + "/api/queue/retry").status_code == 401
    assert httpx.post(dashboard.base + "/api/queue/retry", headers={"x-paxm-token": "nope"}).status_code == 401


def test_unknown_paths_are_json_404(dashboard: Dashboard) -> None:
    for path in ("/api/nothing", "/static/../app.py", "/static/index.html"):
        response = dashboard.get(path)
        assert response.status_code == 404, path


@pytest.mark.parametrize(
    "addr", ["0.0.0.0:7465", "192.168.1.10:7465", ":7465", "[::]:7465", "example.com:80", "nonsense"]
)
def test_non_loopback_bind_is_refused(tmp_path: Path, addr: str) -> None:
    config = write_config(tmp_path / "cfg", previews=False)
    result = paxm(config, "dashboard", "--addr", addr, timeout=30)
    assert result.returncode != 0
    assert "dashboard --addr" in result.stderr and "Traceback" not in result.stderr
    assert "paxm dashboard: http" not in result.stdout


def test_open_hands_a_login_url_to_the_browser_and_days_sets_the_default(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg", previews=False)
    opened = tmp_path / "opened.txt"
    fake_browser = tmp_path / "browser.sh"
    fake_browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    fake_browser.chmod(0o755)
    server = start_dashboard(config, "--open", "--days", "3", env={"BROWSER": f"{fake_browser} %s"})
    try:
        deadline = time.monotonic() + 20
        while not (opened.exists() and opened.read_text()):
            assert time.monotonic() < deadline, "the browser was not started"
            time.sleep(0.1)
        # a one-time login code, never the run's token (tests/dashboard/test_login.py)
        assert opened.read_text().startswith(f"{server.base}/login?code=")
        assert server.token not in opened.read_text()
        assert server.get("/api/summary").json()["days"] == 3
        assert '<meta name="paxm-days" content="3">' in server.get("/").text
    finally:
        stop_dashboard(server)


def test_ipv6_loopback(tmp_path: Path) -> None:
    import socket

    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    config = write_config(tmp_path / "cfg", previews=False)
    server = start_dashboard(config, "--addr", "[::1]:0")  # the last --addr wins
    try:
        assert server.base.startswith("http://[::1]:")
        assert server.get("/api/info").status_code == 200  # Host: [::1]:port
        assert server.get("/api/info", headers={"host": f"localhost:{server.port}"}).status_code == 200
        assert server.get("/api/info", headers={"host": f"[::2]:{server.port}"}).status_code == 403
    finally:
        stop_dashboard(server)


def test_port_in_use_is_a_clear_error(dashboard: Dashboard, store: Store) -> None:
    result = paxm(store.config, "dashboard", "--addr", f"127.0.0.1:{dashboard.port}", timeout=30)
    assert result.returncode == 1 and "cannot listen" in result.stderr and "Traceback" not in result.stderr


# -- writes and privacy -------------------------------------------------------------------------


def test_retry_revives_dead_deliveries(tmp_path: Path) -> None:
    store = generate_activity(tmp_path / "cfg")
    server = start_dashboard(store.config)
    try:
        before = server.get("/api/queue").json()["status"]["deliveries"]
        dead = before["dead"]
        response = server.post("/api/queue/retry")
        assert response.status_code == 200, response.text
        data = response.json()
        assert data["revived"] == dead and "dead" not in data["status"]["deliveries"]
        assert data["status"]["deliveries"]["retry"] == dead
        with sqlite3.connect(store.directory / "hooks" / "capture.sqlite") as conn:
            rows = conn.execute("SELECT state, attempts FROM capture_deliveries WHERE provider = 'broken'").fetchall()
        assert rows and all(r == ("retry", 0) for r in rows)
        cli = json.loads(paxm(store.config, "queue", "status", "--json").stdout)
        assert cli["deliveries"].get("dead", 0) == 0 and cli["deliveries"]["retry"] == dead
        again = server.post("/api/queue/retry").json()
        assert again["revived"] == 0
    finally:
        stop_dashboard(server)


def test_previews_off_hides_query_and_hit_text(store: Store, tmp_path: Path) -> None:
    # Same telemetry and queue, read through a config that did not opt into previews.
    private = write_config(
        tmp_path / "private",
        previews=False,
        state_dir=store.directory / "state",
        queue=store.directory / "hooks" / "capture.sqlite",
    )
    server = start_dashboard(private)
    try:
        raw = server.get("/api/events", params={"limit": "500"}).text
        assert "when does billing deploy" not in raw and "Tuesdays" not in raw
        assert "query_preview" not in raw and "text_preview" not in raw
        events = server.get("/api/events", params={"limit": "500", "kind": "recall"}).json()["events"]
        assert events and all(e.get("query_hash") and e.get("query_length") for e in events if e["success"])
        assert server.get("/api/events", params={"q": "billing"}).json()["total"] == 0
        digest = next(e["query_hash"] for e in events if e.get("query_hash"))
        assert server.get("/api/events", params={"q": digest[:6]}).json()["total"] >= 1
        assert server.get("/api/info").json()["query_previews"] is False
        sessions = server.get("/api/sessions").text
        assert "Which queue library" not in sessions
    finally:
        stop_dashboard(server)


def test_new_events_show_up_without_a_restart(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg", previews=False)
    assert paxm(config, "remember", "--text", "first memory").returncode == 0
    server = start_dashboard(config)
    try:
        assert server.get("/api/events").json()["total"] == 1
        assert server.get("/api/events").json()["total"] == 1  # served from the parsed log
        assert paxm(config, "recall", "--query", "first").returncode == 0
        data = server.get("/api/events").json()
        assert data["total"] == 2 and data["events"][0]["kind"] == "recall"
        assert server.get("/api/summary").json()["totals"]["recalls"] == 1
    finally:
        stop_dashboard(server)


def test_missing_store_shows_empty_views(tmp_path: Path) -> None:
    config = write_config(tmp_path / "fresh", previews=False)
    server = start_dashboard(config)
    try:
        assert server.get("/api/summary").json()["totals"] == {"events": 0}
        assert server.get("/api/events").json() == {"events": [], "total": 0, "limit": 50, "offset": 0}
        assert server.get("/api/sessions").json() == {"sessions": []}
        queue = server.get("/api/queue").json()
        assert queue["status"]["exists"] is False and queue["deliveries"] == []
        assert server.post("/api/queue/retry").json()["revived"] == 0
        assert not (tmp_path / "fresh" / "hooks" / "capture.sqlite").exists()  # looking creates nothing
    finally:
        stop_dashboard(server)


def test_injections_show_why_each_memory_went_in(dashboard: Dashboard, store: Store) -> None:
    """The billing prompt of the generated activity got the billing memory injected by the real daemon."""
    data = dashboard.get("/api/injections").json()
    cli = json.loads(paxm(store.config, "history", "--injections", "--json", "--limit", "1000").stdout)
    assert data["total"] == len(cli["injections"]) >= 1
    assert data["injections"][0] == cli["injections"][-1]  # newest first here, oldest first there
    billing = [e for e in data["injections"] if any("billing" in m["matched_terms"] for m in e["memories"])]
    assert billing, data
    memory = billing[0]["memories"][0]
    assert memory["rank"] >= 1 and memory["provider"] == "sqlite" and memory["id"] and memory["relevance"] > 0
    assert billing[0]["target"] == "codex" and billing[0]["session"] and billing[0]["reason"] == "prompt"
    assert dashboard.get("/api/injections", params={"limit": "0"}).status_code == 400
