"""The paxm hook client: the only code that runs on a harness's per-prompt path.

Installed as ``<venv python> -I -S <client.py> --config C --target T --event E`` (see
:func:`paxm_core.passive.client_command.hook_command`).  It reads the native payload from
stdin, sends it to the daemon at ``<configdir>/hooks/paxm-hook.sock`` and prints the answer.
When the daemon is down or does not answer in time, it stores the payload in the capture inbox
(or the spool beside it when the queue's write lock is busy), starts the daemon detached and
exits.  It always exits 0 within ``--timeout``.  Writes are idempotent by ``event_id``, so an
event whose answer was lost is stored exactly once.
"""

# Only C-level modules (``_socket``, ``_json``, ``posix``): their Python wrappers would double
# the start-up time.  A test checks what this file imports.
import _signal  # type: ignore[import-not-found]  # builtin, already loaded at start-up
import posix
import sys
import time

SOCKET_NAME = "paxm-hook.sock"
LOCK_NAME = "paxm-hook.lock"
QUEUE_NAME = "capture.sqlite"
PROTOCOL_VERSION = 2
#: first bytes of the daemon's framed reply: ``PAXM-HOOK <ok 0|1> <output bytes>\n<output><errors>``
REPLY_MAGIC = b"PAXM-HOOK"
DEFAULT_TIMEOUT = 5.0
MAX_STDIN = 16 * 1024 * 1024
#: how long to wait for a harness to finish writing the payload
STDIN_TIMEOUT = 2.0
#: flags that take a value; any other bare ``--<word>`` flag picks output mode ``<word>``
#: (upstream's ``--json``-style spelling; which modes exist is the integration's business)
_VALUE_FLAGS = ("config", "target", "event", "mode", "timeout", "queue", "daemon_wait")


def _env(name: str) -> str:
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "replace") if value is not None else ""


def _join(*parts: str) -> str:
    out = ""
    for part in parts:
        if part.startswith("/") or not out:
            out = part
        else:
            out = out.rstrip("/") + "/" + part
    return out


def _dirname(path: str) -> str:
    head = path.rpartition("/")[0]
    return head or ("/" if path.startswith("/") else "")


def _abspath(path: str) -> str:
    """Absolute, normalized path (``~`` expanded), without ``os.path``."""
    if path == "~" or path.startswith("~/"):
        path = (_env("HOME") or "/") + path[1:]
    if not path.startswith("/"):
        path = posix.getcwd() + "/" + path
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


#: a file at (or above) the payload's directory that keeps paxm out of a project
IGNORE_MARKER = ".paxm-ignore"
#: payload keys naming the directory, in the order the decoder reads them
_DIR_KEYS = ('"workspace"', '"cwd"', '"current_dir"')


def payload_directory(raw: bytes) -> str:
    """The directory a hook payload names (``cwd`` ...), without decoding the whole payload."""
    import _json

    text = raw[: 1 << 20].decode("utf-8", "replace")
    for key in _DIR_KEYS:
        at = text.find(key)
        while at >= 0:
            rest = at + len(key)
            while rest < len(text) and text[rest] in " \t\r\n":
                rest += 1
            if rest < len(text) and text[rest] == ":":
                rest += 1
                while rest < len(text) and text[rest] in " \t\r\n":
                    rest += 1
                if rest < len(text) and text[rest] == '"':
                    try:
                        value = _json.scanstring(text, rest + 1)[0]
                    except ValueError:
                        return ""
                    if isinstance(value, str) and value.strip().startswith("/"):
                        return value.strip()
            at = text.find(key, at + 1)
    return ""


def opted_out(directory: str) -> bool:
    """True when ``directory`` or one of its parents holds :data:`IGNORE_MARKER`."""
    if not directory:
        return False
    current = _abspath(directory)
    while True:
        try:
            posix.stat(_join(current, IGNORE_MARKER))
            return True
        except OSError:
            pass
        if current == "/":
            return False
        current = _dirname(current)


class DaemonDown(OSError):
    """No daemon listens on the socket (missing file or connection refused)."""


def default_config_path() -> str:
    """``$PAXM_CONFIG`` > ``$XDG_CONFIG_HOME/paxm/config.yaml`` > ``~/.config/paxm/config.yaml``."""
    explicit = _env("PAXM_CONFIG").strip()
    if explicit:
        return _abspath(explicit)
    base = _env("XDG_CONFIG_HOME").strip() or _abspath("~/.config")
    return _join(base, "paxm", "config.yaml")


def hooks_dir(config_path: str) -> str:
    """``<configdir>/hooks`` for a config file path."""
    return _join(_dirname(_abspath(config_path)), "hooks")


def socket_path(config_path: str) -> str:
    """The daemon socket for ``config_path``."""
    return _join(hooks_dir(config_path), SOCKET_NAME)


def new_event_id() -> str:
    """``evt_<32 hex>``: the idempotency key of one hook event."""
    return "evt_" + posix.urandom(16).hex()


def parse_args(argv: list[str]) -> dict[str, str]:
    """Parse the installed command line; unknown flags are ignored (fail open)."""
    opts = {
        "config": "",
        "target": "",
        "event": "",
        "mode": "text",
        "timeout": str(DEFAULT_TIMEOUT),
        "queue": "",
        "daemon_wait": str(DAEMON_WAIT),
    }
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        name = key.lstrip("-").replace("-", "_")
        if key.startswith("--") and name in _VALUE_FLAGS:
            if not eq:
                i += 1
                value = argv[i] if i < len(argv) else ""
            opts[name] = value
        elif key == "-c":
            i += 1
            opts["config"] = argv[i] if i < len(argv) else ""
        elif arg.startswith("--") and not eq and name.isidentifier():
            opts["mode"] = name
        i += 1
    for name, default, least in (("timeout", DEFAULT_TIMEOUT, 0.05), ("daemon_wait", DAEMON_WAIT, 0.0)):
        try:
            opts[name] = str(max(least, float(opts[name])))
        except ValueError:
            opts[name] = str(default)
    if not opts["config"]:
        opts["config"] = default_config_path()
    return opts


class _Expired(Exception):
    """Raised by the SIGALRM handler: a time limit of the hook passed."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Expired()


def _alarm(seconds: float) -> None:
    _signal.setitimer(_signal.ITIMER_REAL, max(0.0, seconds))


def read_stdin(limit: float = STDIN_TIMEOUT) -> bytes:
    """The payload (bounded in size and time).

    An oversized payload is drained and replaced by ``b""``.  A harness that never closes
    stdin gets what arrived within ``limit`` seconds: hooks must not hang on a pipe.
    """
    chunks = []
    size = 0
    try:
        fd = sys.stdin.fileno()
        if posix.isatty(fd):
            return b""
    except (AttributeError, ValueError, OSError):
        return b""
    _alarm(limit)
    try:
        while True:
            try:
                chunk = posix.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            size += len(chunk)
            if size <= MAX_STDIN:
                chunks.append(chunk)
    except _Expired:
        pass
    finally:
        _alarm(0)
    return b"".join(chunks) if size <= MAX_STDIN else b""


def encode_request(fields: dict[str, object]) -> bytes:
    """One JSON object line from str/float/int fields, without the ``json`` module."""
    import _json

    _enc = _json.encode_basestring_ascii
    parts = [
        _enc(key) + ":" + (_enc(value) if isinstance(value, str) else repr(value)) for key, value in fields.items()
    ]
    return ("{" + ",".join(parts) + "}\n").encode("ascii")


#: AF_UNIX paths longer than this do not fit ``sun_path`` (108 bytes on Linux, 104 on macOS)
MAX_SOCKET_PATH = 100


def connect_unix(sock: object, path: str, *, bind: bool = False) -> None:
    """``sock.connect(path)`` (or ``bind``), via the socket's directory when the path is too long for AF_UNIX."""
    call = sock.bind if bind else sock.connect  # type: ignore[attr-defined]
    if len(path.encode()) <= MAX_SOCKET_PATH:
        call(path)
        return
    cwd = posix.getcwd()
    directory, _, name = path.rpartition("/")
    posix.chdir(directory or "/")
    try:
        call(name)
    finally:
        posix.chdir(cwd)


def exchange(path: str, request: bytes, timeout: float) -> bytes:
    """Send ``request`` and read the reply until EOF; :class:`DaemonDown` if nobody listens."""
    import _socket

    deadline = time.monotonic() + timeout
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(min(1.0, timeout))
        try:
            connect_unix(sock, path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise DaemonDown(str(exc)) from None
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while True:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    return b"".join(chunks)


def parse_reply(reply: bytes) -> tuple[str, str]:
    """``(output, errors)`` from a framed reply; ``ValueError`` if it is not one."""
    header, sep, body = reply.partition(b"\n")
    fields = header.split(b" ")
    if not sep or len(fields) != 3 or fields[0] != REPLY_MAGIC:
        raise ValueError("hook daemon sent no valid answer")
    size = int(fields[2])
    if size < 0 or size > len(body):
        raise ValueError("hook daemon answer is truncated")
    return body[:size].decode("utf-8", "replace"), body[size:].decode("utf-8", "replace")


def _light_stand_ins() -> dict[str, object]:
    """C-level stand-ins for ``sqlite3`` and ``hashlib``, the only two packages ``_inbox.py`` imports."""
    stand_ins: dict[str, object] = {}
    try:
        import _sha256  # type: ignore[import-not-found]
        import _sqlite3
    except ImportError:
        return stand_ins
    if "hashlib" not in sys.modules:
        hashlib = type(sys)("hashlib")
        hashlib.sha256 = _sha256.sha256  # type: ignore[attr-defined]
        stand_ins["hashlib"] = hashlib
    if "sqlite3" not in sys.modules:

        class KeepOpen(_sqlite3.Connection):
            # closing the last WAL connection checkpoints (two fsyncs): left to the daemon
            def close(self) -> None:
                pass

        def connect(*args: object, **kwargs: object) -> object:
            kwargs["factory"] = KeepOpen
            return _sqlite3.connect(*args, **kwargs)  # type: ignore[call-overload]

        sqlite3 = type(sys)("sqlite3")
        sqlite3.connect = connect  # type: ignore[attr-defined]
        stand_ins["sqlite3"] = sqlite3
    return stand_ins


def _load_file(path: str, name: str, light: bool = False) -> dict[str, object]:
    """The namespace of the module at ``path``, loaded through the bytecode cache.

    :param light: with :func:`_light_stand_ins` in ``sys.modules`` while it loads.
    """
    import _frozen_importlib  # already loaded by the interpreter itself
    import _frozen_importlib_external

    stand_ins = _light_stand_ins() if light else {}
    sys.modules.update(stand_ins)  # type: ignore[arg-type]
    try:
        spec = _frozen_importlib_external.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = _frozen_importlib.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for key, value in stand_ins.items():
            if sys.modules.get(key) is value:
                del sys.modules[key]
    return vars(module)


def _load_capture_module(name: str) -> dict[str, object]:
    """``paxm_core/capture/<name>.py`` (``_inbox`` or ``_spool``), loaded by path."""
    here = _dirname(_abspath(__file__))
    return _load_file(_join(_dirname(here), "capture", name + ".py"), "paxm_capture" + name, light=True)


#: the longest an inbox append waits for the queue file's write lock before the event goes to
#: the spool instead (``capture/_spool.py``): the lock's holder may keep it for seconds
INBOX_WAIT = 0.25
#: the part of ``--timeout`` kept back from the daemon exchange for the inbox/spool fallback
FALLBACK_RESERVE = 1.0


def fallback_reserve(timeout: float) -> float:
    """Seconds of a ``timeout`` budget kept for storing the event when the daemon does not answer."""
    return min(FALLBACK_RESERVE, timeout / 4)


def append_inbox(
    queue_path: str,
    event_id: str,
    target: str,
    event: str,
    raw: bytes,
    received_at: float,
    wait: float = INBOX_WAIT,
) -> bool:
    """Store the payload durably (returns after COMMIT or fsync), credentials and ``<private>`` text redacted.

    A redactor that fails to load loses the event rather than storing it raw.  When the queue
    file's write lock is not free within ``wait`` seconds (or the file fails), the event goes
    to the spool beside it.
    """
    redact_bytes = _load_file(_join(_dirname(_abspath(__file__)), "_redact.py"), "paxm_redact")["redact_bytes"]
    assert callable(redact_bytes)
    raw = redact_bytes(raw)
    inbox = _load_capture_module("_inbox")
    append_raw = inbox["append_raw"]
    assert callable(append_raw)
    conflict = inbox["InboxConflict"]
    assert isinstance(conflict, type)
    try:
        return bool(append_raw(queue_path, event_id, target, event, raw, received_at, timeout=max(0.01, wait)))
    except Exception as exc:  # locked, or the file is unusable: the spool takes the event
        if isinstance(exc, conflict):  # the same id with other bytes: not a storage failure
            raise
        append_record = _load_capture_module("_spool")["append_record"]
        assert callable(append_record)
        append_record(queue_path, event_id, target, event, raw, received_at)
        return True


def daemon_command(config_path: str) -> list[str]:
    """The argv that starts the daemon with this interpreter.

    ``-P``: ``-m`` would otherwise put the harness's working directory (the user's project)
    first on ``sys.path``, so a ``yaml.py`` in a cloned repository would run inside the daemon.
    """
    return [sys.executable, "-P", "-m", "paxm_core.passive.daemon", "--config", _abspath(config_path)]


def start_daemon(config_path: str, ready_fd: int | None = None) -> int:
    """Start the daemon detached: new session, stdio on /dev/null, nothing inherited.

    :param ready_fd: one end of a socket pair, handed to the daemon as its fd 3
        (``--ready-fd 3``): it sends :data:`READY` once it listens, :data:`LOCKED` when another
        daemon holds the lock, and nothing (the end closes) when it fails to start.
    """
    argv = daemon_command(config_path)
    env = dict(posix.environ)
    env.pop(b"PAXM_INTEGRATION_OWNER", None)
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (posix.POSIX_SPAWN_OPEN, 0, "/dev/null", posix.O_RDONLY, 0),
        (posix.POSIX_SPAWN_OPEN, 1, "/dev/null", posix.O_WRONLY, 0),
        (posix.POSIX_SPAWN_DUP2, 1, 2),
    ]
    if ready_fd is not None:
        actions.append((posix.POSIX_SPAWN_DUP2, ready_fd, 3))
        argv += ["--ready-fd", "3"]
    return posix.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)


#: what a daemon started with ``--ready-fd`` sends: listening, or another daemon holds the lock
READY = b"R"
LOCKED = b"L"


def ready_channel() -> tuple[object, int] | tuple[None, None]:
    """``(client end, daemon end fd)`` of a socket pair for :func:`start_daemon`, or ``(None, None)``."""
    try:
        import _socket

        mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except (ImportError, OSError):
        return None, None
    return mine, theirs.detach()


#: events whose answer carries context for the model: worth waiting for a starting daemon
CONTEXT_EVENTS = ("user_input", "session_start", "userpromptsubmit", "sessionstart", "pre_tool", "pretooluse")
#: how long a context event waits for a daemon it just started (upstream: 20 x 50 ms)
DAEMON_WAIT = 1.5


def _request(event_id: str, target: str, event: str, mode: str, captured_at: float, raw: bytes) -> bytes:
    return encode_request(
        {
            "v": PROTOCOL_VERSION,
            "event_id": event_id,
            "target": target,
            "event": event,
            "owner": _env("PAXM_INTEGRATION_OWNER"),
            "mode": mode,
            "captured_at": captured_at,
            "reply": "framed",
            "raw": raw.decode("utf-8", "replace"),
        }
    )


#: how often a waiting client looks for the new daemon's socket
DAEMON_POLL = 0.004


def _ask_new_daemon(sock: str, request: bytes, budget: float, ready: object = None) -> str:
    """Wait for a just-started daemon and ask it; ``""`` if it is not up in time.

    With a ready channel the wait is one blocking read, ended at once by a daemon that failed
    to start; without one (or when another daemon held the lock), poll for the socket.
    """
    deadline = time.monotonic() + budget

    def ask() -> str | None:
        try:
            return parse_reply(exchange(sock, request, max(0.05, deadline - time.monotonic())))[0]
        except (OSError, ValueError):
            return None

    if ready is not None:
        try:
            ready.settimeout(max(0.01, budget))  # type: ignore[attr-defined]
            try:
                said = ready.recv(1)  # type: ignore[attr-defined]
            except OSError:  # TimeoutError: not up in time
                return ""
        finally:
            ready.close()  # type: ignore[attr-defined]
        if said == READY:
            return ask() or ""
        if said != LOCKED:
            return ""  # the daemon exited without listening: its log says why, doctor shows it
    while time.monotonic() < deadline:
        try:
            posix.stat(sock)
        except FileNotFoundError:
            time.sleep(DAEMON_POLL)
            continue
        answer = ask()
        if answer is not None:
            return answer
        time.sleep(DAEMON_POLL * 5)
    return ""


def run(argv: list[str], stdin_bytes: bytes | None = None) -> tuple[str, str]:
    """Handle one hook; returns ``(stdout_text, stderr_text)``.  Never raises."""
    out, err = "", ""
    try:
        opts = parse_args(argv)
        timeout = float(opts["timeout"])
        raw = read_stdin(min(STDIN_TIMEOUT, timeout)) if stdin_bytes is None else stdin_bytes
        if stdin_bytes is None:
            # backstop: a daemon that holds the queue lock must not hold the harness either
            _alarm(timeout + 2.0)
        captured_at = time.time()
        event_id = new_event_id()
        target = opts["target"]
        event = opts["event"] or "user_input"
        sock = socket_path(opts["config"])
        started = time.monotonic()
        if opted_out(payload_directory(raw)):
            return "", ""  # the project keeps paxm out: no capture, no recall, no output
        request = _request(event_id, target, event, opts["mode"], captured_at, raw)
        try:
            try:
                posix.stat(sock)
            except FileNotFoundError:
                raise DaemonDown(sock) from None  # no socket file: nothing to connect to
            # what is left of the budget after the exchange stores the event if the daemon
            # does not answer (e.g. it waits for a queue lock that another process holds)
            out, err = parse_reply(exchange(sock, request, timeout - fallback_reserve(timeout)))
        except (OSError, ValueError) as exc:
            spawned = False
            ready: object = None
            waits = event.lower() in CONTEXT_EVENTS and float(opts["daemon_wait"]) > 0
            if isinstance(exc, DaemonDown):
                # started before the inbox COMMIT, so its start-up overlaps it (the inbox is
                # idempotent by event_id: an event found late or twice is stored once)
                ready, theirs = ready_channel() if waits else (None, None)
                try:
                    start_daemon(opts["config"], theirs)
                    spawned = True
                except OSError as spawn_exc:
                    err += f"paxm hook: daemon not started: {spawn_exc}\n"
                finally:
                    if theirs is not None:
                        posix.close(theirs)  # the daemon has its copy: EOF here means it exited
            queue = opts["queue"] or _join(hooks_dir(opts["config"]), QUEUE_NAME)
            try:
                # The inbox has no owner column: a plugin caller's owner rides on the event name
                # (``UserPromptSubmit@claude-plugin``) so the replay applies the same ownership gate.
                owner = _env("PAXM_INTEGRATION_OWNER").strip()
                inbox_event = f"{event}@{owner}" if owner else event
                wait = min(INBOX_WAIT, fallback_reserve(timeout) / 2)
                append_inbox(queue, event_id, target, inbox_event, raw, captured_at, wait)
            except Exception as inbox_exc:  # fail open: the harness must never see a hook error
                err += f"paxm hook: event not captured: {inbox_exc}\n"
            if isinstance(exc, DaemonDown):
                if spawned:
                    left = timeout - (time.monotonic() - started)
                    if waits and left > 0.2:
                        # The event is already stored; wait briefly for the new daemon so this
                        # prompt still gets its memories (the daemon skips the stored copy).
                        out = _ask_new_daemon(sock, request, min(float(opts["daemon_wait"]), left), ready)
            else:
                err += f"paxm hook: daemon did not answer ({exc}); event kept in the inbox\n"
    except BaseException as exc:  # noqa: BLE001 - the contract is "always exit 0"
        err += f"paxm hook: {type(exc).__name__}: {exc}\n"
    return out, err


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[posix.write(fd, view) :]


def main() -> None:
    """Entry point: run, write stdout/stderr, exit 0 without interpreter teardown (SIGALRM bounds the run)."""
    _signal.signal(_signal.SIGALRM, _on_alarm)
    out, err = run(sys.argv[1:])
    _alarm(0)
    try:
        if out:
            _write_all(1, (out if out.endswith("\n") else out + "\n").encode("utf-8", "replace"))
        if err:
            _write_all(2, err.encode("utf-8", "replace"))
    except OSError:
        pass
    posix._exit(0)


if __name__ == "__main__":
    main()
