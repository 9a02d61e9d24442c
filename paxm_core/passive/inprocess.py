"""``paxm __hook``: the daemon's request handling, run inside the calling process."""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["run_hook"]


def run_hook(
    config_path: str, target: str, event: str, raw: str, *, mode: str, owner: str = ""
) -> tuple[str, list[str]]:
    """Load the runtime, handle one hook event like the daemon would, return ``(stdout, errors)``.

    Writes are appended to the capture queue directly; a detached daemon is started to deliver
    them if none runs.  Never raises: a broken config becomes an error line.
    """
    from paxm_core.passive.client_core import new_event_id

    request = {
        "event_id": new_event_id(),
        "target": target,
        "event": event,
        "raw": raw,
        "owner": owner,
        "mode": mode,
        "captured_at": time.time(),
    }
    try:
        from paxm_core.capture import CaptureQueue, default_queue_path, routes_from_write_profiles
        from paxm_core.passive.daemon import response_errors
        from paxm_core.passive.processor import HookProcessor
        from paxm_core.runtime import Runtime

        runtime = Runtime.load(config_path)
    except Exception as exc:
        return "", [f"skipped: {exc}"]
    try:
        config = runtime.config
        queue = CaptureQueue(default_queue_path(config), routes=routes_from_write_profiles(config.write_profiles))
        try:
            telemetry = runtime.tools.telemetry  # receipts and session signals, as the daemon records them
            processor = HookProcessor(
                runtime,
                queue,
                session_state_path=Path(config_path).parent / "hooks" / "session_state.json",
                record=getattr(telemetry, "record", None),
            )
            try:
                response = processor.handle_hook(request)
            finally:
                processor.close()
        finally:
            queue.close()
    finally:
        runtime.close()
    if response.get("buffered"):
        _ensure_daemon(config_path)
    return str(response.get("output") or ""), response_errors(response)


def _ensure_daemon(config_path: str) -> None:
    from paxm_core.passive.client_core import socket_path, start_daemon
    from paxm_core.passive.control import request_json

    try:
        request_json(socket_path(config_path), {"action": "ping"}, 0.5)
    except (OSError, ValueError):
        try:
            start_daemon(config_path)
        except OSError:
            pass
