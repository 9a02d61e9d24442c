"""OpenCode's stored sessions as past turns, for backfill.

Where: ``$PAXM_OPENCODE_DATA_DIR``, else ``$XDG_DATA_HOME/opencode``; a fork (Kilo Code) passes
its own directory and target name.  Two layouts: OpenCode 1.x's SQLite database
``opencode*.db`` (``session``, ``message`` and ``part`` tables with JSON ``data``; opened
read-only, the whole database is one transcript file) and older releases' JSON tree under
``storage/`` (each session file is one transcript file).

A turn is a user message and the assistant messages answering it, read as the live plugin
sends it at ``session.idle`` (so a turn captured live is recognised and not stored twice):
visible ``text`` parts only (not ``synthetic`` nor ``ignored``; never ``reasoning`` or ``tool``).
Subagent sessions (``parent_id`` set) are not turns of their own; damaged rows, files or a
locked database yield nothing for what they affect.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paxm_core.integration import HookMessage, PastTurn, past_turn

__all__ = ["data_dir", "read_turns", "transcript_files"]

_SOURCE = "opencode_backfill"
#: a row's or JSON file's ``data`` larger than this is skipped
MAX_RECORD = 4 * 1024 * 1024
#: characters of one message's text; messages kept per turn (the oldest go first)
MAX_TEXT = 64 * 1024
MAX_MESSAGES = 40
#: bounds per session: messages read, parts read per message
MAX_SESSION_MESSAGES = 20_000
MAX_MESSAGE_PARTS = 2_000
#: environment variables naming OpenCode's data dir (first set wins)
DATA_DIR_ENV = ("PAXM_OPENCODE_DATA_DIR",)


def data_dir(
    environ: Mapping[str, str] | None = None, env_vars: tuple[str, ...] = DATA_DIR_ENV, name: str = "opencode"
) -> Path:
    """The harness's data directory: the first of ``env_vars`` set, else ``$XDG_DATA_HOME/<name>``."""
    env = os.environ if environ is None else environ
    for var in env_vars:
        explicit = env.get(var, "").strip()
        if explicit:
            return Path(explicit).expanduser().absolute()
    xdg = env.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path(env.get("HOME") or Path.home()) / ".local" / "share"
    return base.absolute() / name


def transcript_files(root: Path) -> list[Path]:
    """The databases in ``root``, then its legacy session files, sorted (absent: ``[]``)."""
    if not root.is_dir():
        return []
    databases = sorted(p for p in root.glob("*.db") if p.is_file())
    legacy = root / "storage" / "session"
    sessions = sorted(p for p in legacy.glob("*/ses_*.json") if p.is_file()) if legacy.is_dir() else []
    return databases + sessions


def _str(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _ms(value: Any) -> float:
    return float(value) / 1000.0 if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _clip(text: str) -> str:
    text = text.strip()
    return text[:MAX_TEXT] if len(text) > MAX_TEXT else text


def _visible(parts: Iterable[Mapping[str, Any]]) -> str:
    texts = [
        _str(p, "text").strip()
        for p in parts
        if p.get("type") == "text" and p.get("synthetic") is not True and p.get("ignored") is not True
    ]
    return _clip("\n\n".join(t for t in texts if t))


@dataclass
class _Message:
    id: str
    info: dict[str, Any]
    parts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Session:
    id: str
    directory: str
    parent: str


def _turns(path: Path, target: str, session: _Session, messages: Iterable[_Message]) -> Iterator[PastTurn]:
    """Group one session's messages (in order) into turns."""
    prompt_msg: _Message | None = None
    prompt = ""
    answer = ""
    convo: list[HookMessage] = []

    def finish() -> PastTurn | None:
        if prompt_msg is None or not prompt or not answer:
            return None
        return _past_turn(path, target, session, prompt_msg, prompt, answer, convo)

    for message in messages:
        role = _str(message.info, "role")
        if role == "user":
            text = _visible(message.parts)
            if not text:
                continue  # a user message with only files or synthetic text belongs to the turn
            done = finish()
            if done is not None:
                yield done
            prompt_msg, prompt, answer = message, text, ""
            convo = [HookMessage("user", text, _SOURCE)]
        elif role == "assistant" and prompt_msg is not None:
            parent = _str(message.info, "parentID")
            if parent and parent != prompt_msg.id:
                continue  # answers an earlier prompt (a reverted or forked branch)
            text = _visible(message.parts)
            if text:
                answer = text
                convo.append(HookMessage("assistant", text, _SOURCE))
            del convo[: max(0, len(convo) - MAX_MESSAGES)]
    done = finish()
    if done is not None:
        yield done


def _past_turn(
    path: Path, target: str, session: _Session, user: _Message, prompt: str, answer: str, convo: list[HookMessage]
) -> PastTurn:
    started = _created(user.info)
    return past_turn(
        target,
        "session.idle",
        (target, session.id, user.id, prompt),
        path=path,
        session=session.id,
        prompt=prompt,
        answer=answer,
        started=started,
        workspace=session.directory,
        messages=convo,
        metadata={"opencode_message_id": user.id},
        captured_at=started,
    )


def _json(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str) or len(text) > MAX_RECORD:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _connect(path: Path) -> sqlite3.Connection:
    # read-only: a running OpenCode keeps writing; never create, migrate or lock its database.
    # With no write-ahead log beside it (OpenCode is not running) the file is opened immutable,
    # so reading it leaves no -wal/-shm files of ours in OpenCode's data dir.
    if not path.is_file():
        raise sqlite3.OperationalError(f"no database at {path}")
    live = path.with_name(path.name + "-wal").exists()
    uri = f"{path.absolute().as_uri()}?mode=ro" + ("" if live else "&immutable=1")
    conn = sqlite3.connect(uri, uri=True, timeout=2.0, check_same_thread=False)
    conn.execute("PRAGMA query_only = 1")
    return conn


def _db_messages(conn: sqlite3.Connection, session_id: str) -> Iterator[_Message]:
    rows = conn.execute(
        "SELECT id, data FROM message WHERE session_id = ? AND length(data) <= ? ORDER BY time_created, id LIMIT ?",
        (session_id, MAX_RECORD, MAX_SESSION_MESSAGES),
    ).fetchall()
    for message_id, data in rows:
        info = _json(data)
        if info is None or _str(info, "role") not in ("user", "assistant"):
            continue
        message = _Message(str(message_id), info)
        for (part_data,) in conn.execute(
            "SELECT data FROM part WHERE message_id = ? AND length(data) <= ? ORDER BY id LIMIT ?",
            (message_id, MAX_RECORD, MAX_MESSAGE_PARTS),
        ):
            part = _json(part_data)
            if part is not None:
                message.parts.append(part)
        yield message


def _read_database(path: Path, target: str) -> Iterator[PastTurn]:
    try:
        conn = _connect(path)
    except sqlite3.Error:
        return
    try:
        sessions = conn.execute("SELECT id, directory, parent_id FROM session ORDER BY time_created, id").fetchall()
        for sid, directory, parent in sessions:
            session = _Session(str(sid), str(directory or ""), str(parent or ""))
            if session.parent:
                continue  # a subagent's session: its prompts are the agent's own
            yield from _turns(path, target, session, list(_db_messages(conn, session.id)))
    except sqlite3.Error:
        return  # locked, corrupt or not OpenCode's: what was read stands
    finally:
        conn.close()


def _json_file(path: Path) -> dict[str, Any] | None:
    try:
        if path.stat().st_size > MAX_RECORD:
            return None
        return _json(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def _created(info: Mapping[str, Any]) -> float:
    time = info.get("time")
    return _ms(time.get("created")) if isinstance(time, dict) else 0.0


def _read_storage(path: Path, target: str) -> Iterator[PastTurn]:
    info = _json_file(path)
    if info is None:
        return
    storage = path.parents[2]
    session = _Session(_str(info, "id") or path.stem, _str(info, "directory"), _str(info, "parentID"))
    if session.parent:
        return
    found: list[_Message] = []
    message_dir = storage / "message" / session.id
    files = sorted(message_dir.glob("msg_*.json"))[:MAX_SESSION_MESSAGES] if message_dir.is_dir() else []
    for file in files:
        data = _json_file(file)
        if data is None or _str(data, "role") not in ("user", "assistant"):
            continue
        message = _Message(_str(data, "id") or file.stem, data)
        part_dir = storage / "part" / message.id
        for part_file in sorted(part_dir.glob("prt_*.json"))[:MAX_MESSAGE_PARTS] if part_dir.is_dir() else []:
            part = _json_file(part_file)
            if part is not None:
                message.parts.append(part)
        found.append(message)
    found.sort(key=lambda m: (_created(m.info), m.id))
    yield from _turns(path, target, session, found)


def read_turns(path: Path, target: str = "opencode") -> Iterator[PastTurn]:
    """The finished turns of one database or legacy session file; tolerant of partial or corrupt data."""
    if path.suffix == ".db":
        yield from _read_database(path, target)
    else:
        yield from _read_storage(path, target)
