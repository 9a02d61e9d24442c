"""On-disk telemetry: the rolling JSONL event log and the atomically rewritten metrics file.

Writers hold an exclusive ``flock`` on ``telemetry.lock``, so the CLI, the MCP server and the hook
daemon record concurrently.  Files are 0600 in a 0700 directory, opened through
:mod:`paxm_core.private_files` (never through a link): events describe what the user's agents did.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from paxm_core.api.json import JSONObject
from paxm_core.atomic import write_atomic
from paxm_core.telemetry.metrics import Metrics
from paxm_core.telemetry.settings import TelemetrySettings

try:  # flock is POSIX-only; elsewhere writers are not serialized (as upstream).
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["EventCursor", "TelemetryStore"]


class TelemetryStore:
    """File-level operations on one telemetry directory."""

    def __init__(self, settings: TelemetrySettings) -> None:
        self.settings = settings

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        from paxm_core.private_files import open_private

        fd = open_private(self.settings.lock_path, os.O_RDWR)  # makes the directory too
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def append_many(self, events: Sequence[Mapping[str, object]]) -> None:
        """Append event lines in order, rotating before a line that would overflow the active file.

        Consecutive lines that fit go out in one write.  Call with the lock held.
        """
        path = self.settings.events_path
        cap = self.settings.max_event_file_bytes
        from paxm_core.private_files import open_private

        lines = [(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8") for e in events]
        start = 0
        while start < len(lines):
            self._rotate_if_needed(path, len(lines[start]))
            try:
                room = cap - path.stat().st_size
            except FileNotFoundError:
                room = cap
            end, size = start + 1, len(lines[start])
            while end < len(lines) and size + len(lines[end]) <= room:
                size += len(lines[end])
                end += 1
            fd = open_private(path, os.O_WRONLY | os.O_APPEND)  # 0600 when new, never through a link
            try:
                data = memoryview(b"".join(lines[start:end]))
                while data:  # a regular file takes it in one write; a short one is finished
                    data = data[os.write(fd, data) :]
            finally:
                os.close(fd)
            start = end

    def _rotate_if_needed(self, path: Path, incoming: int) -> None:
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return
        if size + incoming <= self.settings.max_event_file_bytes:
            return
        backups = self.settings.max_event_files - 1
        if backups <= 0:
            path.unlink(missing_ok=True)
            return
        path.with_name(f"{path.name}.{backups}").unlink(missing_ok=True)
        for i in range(backups - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(path.with_name(f"{path.name}.{i}"), path.with_name(f"{path.name}.{i + 1}"))
        os.replace(path, path.with_name(f"{path.name}.1"))

    def load_metrics(self, *, repair: bool = False) -> Metrics:
        """Read the metrics file (empty when missing); a corrupt one raises ``ValueError``, or with
        ``repair`` is moved aside to ``<name>.corrupt`` so one bad write cannot stop telemetry forever."""
        path = self.settings.metrics_path
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Metrics()
        if not text.strip():
            return Metrics()
        try:
            return Metrics.from_json(json.loads(text))
        except ValueError as exc:
            if not repair:
                raise ValueError(f"metrics file {path} is corrupt: {exc}") from exc
            os.replace(path, path.with_name(path.name + ".corrupt"))
            return Metrics()

    def save_metrics(self, metrics: Metrics) -> None:
        """Write the metrics file atomically (temp file + rename), mode 0600.  Call with the lock held."""
        path = self.settings.metrics_path
        # compact: json uses its C encoder only without indent, and this file is rewritten per event
        data = (json.dumps(metrics.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        write_atomic(path, data, durable=False)

    def tail(self, limit: int) -> list[JSONObject]:
        """The last ``limit`` events across the rotated files, oldest first."""
        if limit <= 0:
            return []
        events: list[JSONObject] = []
        for path in self.settings.event_paths_oldest_first():
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            complete = data[: data.rfind(b"\n") + 1]  # a torn last line is still being written
            events.extend(decode_lines(complete))
        return events[-limit:]

    def follow(
        self,
        tail: int,
        emit: Callable[[JSONObject], None],
        *,
        poll_interval: float = 0.25,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        """Emit the last ``tail`` events, then new ones as appended (across rotations) until ``should_stop()``."""
        with self.locked():
            initial = self.tail(tail)
            cursor = EventCursor(self.settings)
            cursor.open_active(at_end=True)
        try:
            for event in initial:
                emit(event)
            while not should_stop():
                time.sleep(poll_interval)
                for event in cursor.poll():
                    emit(event)
        finally:
            cursor.close()

    def storage_info(self) -> dict[str, str | int]:
        """``{dir, events_file, metrics_file, event_bytes, total_bytes, max_event_file_bytes, max_event_files}``."""
        s = self.settings
        event_bytes = 0
        total = 0
        for path in [s.events_path, s.metrics_path, *s.event_paths_oldest_first()[:-1]]:
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if path == s.events_path:
                event_bytes = size
            total += size
        return {
            "dir": str(s.dir),
            "events_file": str(s.events_path),
            "metrics_file": str(s.metrics_path),
            "event_bytes": event_bytes,
            "total_bytes": total,
            "max_event_file_bytes": s.max_event_file_bytes,
            "max_event_files": s.max_event_files,
        }


def decode_lines(data: bytes) -> list[JSONObject]:
    """Decode complete JSONL lines; lines that are not JSON objects are skipped, not fatal."""
    events: list[JSONObject] = []
    for raw in data.split(b"\n"):
        raw = raw.strip()
        if not raw:
            continue
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


class EventCursor:
    """Reads an event log as it grows, following renames made by rotation without losing lines."""

    def __init__(self, settings: TelemetrySettings) -> None:
        self.settings = settings
        self._file: IO[bytes] | None = None
        self._pending = b""

    def open_active(self, *, at_end: bool) -> None:
        """Open the active file (if it exists), optionally positioned at its end."""
        self.close()
        try:
            self._file = open(self.settings.events_path, "rb")  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            return
        if at_end:
            self._file.seek(0, os.SEEK_END)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._pending = b""

    def _read_available(self) -> list[JSONObject]:
        if self._file is None:
            return []
        data = self._pending + self._file.read()
        cut = data.rfind(b"\n") + 1
        self._pending = data[cut:]
        return decode_lines(data[:cut])

    def poll(self) -> list[JSONObject]:
        """Events appended since the last poll, in order."""
        events = self._read_available()
        active = self.settings.events_path
        try:
            active_stat = active.stat()
        except FileNotFoundError:
            return events
        if self._file is None:
            self.open_active(at_end=False)
            return events + self._read_available()
        mine = os.fstat(self._file.fileno())
        if (mine.st_dev, mine.st_ino) == (active_stat.st_dev, active_stat.st_ino):
            if active_stat.st_size < self._file.tell():  # truncated or replaced in place: start over
                self._file.seek(0)
                self._pending = b""
                events += self._read_available()
            return events
        # Rotated: finish the renamed file through the open handle (lines may have landed after
        # the read above), then read every newer backup and the new active file in order.
        events += self._read_available()
        paths = self.settings.event_paths_oldest_first()
        index = len(paths) - 2
        for i, path in enumerate(paths):
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
                index = i
                break
        self.close()
        for path in paths[index + 1 : -1]:
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            events += decode_lines(data)
        self.open_active(at_end=False)
        return events + self._read_available()
