"""The paxm hook client: the only code that runs on a harness's per-prompt path.

Installed as ``<absolute venv python> -I -S <absolute path of this file> --config C
--target T --event E`` (see :func:`paxm_core.hooks.command.hook_command`).  It imports only
C-level stdlib modules, so it starts about as fast as Python itself, and it never imports paxm:

1. read the native payload from stdin;
2. send ``{event_id, target, event, raw, owner, mode, captured_at}`` to the hook daemon at
   ``<configdir>/hooks/paxm-hook.sock`` and print the daemon's ``output``;
3. if the daemon is down (or dies mid-request), append the raw payload to the capture inbox
   (``paxm_core/capture/_inbox.py``, loaded by path; acknowledged after COMMIT), start the
   daemon detached and exit;
4. always exit 0 (``os._exit``), within ``--timeout`` seconds.

The daemon acknowledges writes only after COMMIT, and the inbox is idempotent by
``event_id``, so an event whose answer was lost is stored at most once.
"""

# Only C-level stdlib modules below: a test checks sys.modules after running this file.  No
# ``from __future__ import annotations`` either: it is one more module to load, and the
# annotations below are valid at run time on Python 3.11.
import json
import os
import socket
import sys
import time

SOCKET_NAME = "paxm-hook.sock"
LOCK_NAME = "paxm-hook.lock"
QUEUE_NAME = "capture.sqlite"
PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT = 5.0
MAX_STDIN = 16 * 1024 * 1024
_OUTPUT_FLAGS = ("--json", "--cline", "--cursor", "--zcode", "--kimi")


def default_config_path() -> str:
    """``$PAXM_CONFIG`` > ``$XDG_CONFIG_HOME/paxm/config.yaml`` > ``~/.config/paxm/config.yaml``."""
    explicit = os.environ.get("PAXM_CONFIG", "").strip()
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "paxm", "config.yaml")


def hooks_dir(config_path: str) -> str:
    """``<configdir>/hooks`` for a config file path."""
    return os.path.join(os.path.dirname(os.path.abspath(os.path.expanduser(config_path))), "hooks")


def socket_path(config_path: str) -> str:
    """The daemon socket for ``config_path``."""
    return os.path.join(hooks_dir(config_path), SOCKET_NAME)


def new_event_id() -> str:
    """``evt_<32 hex>``: the idempotency key of one hook event."""
    return "evt_" + os.urandom(16).hex()


def parse_args(argv: list[str]) -> dict[str, str]:
    """Parse the installed command line; unknown flags are ignored (fail open)."""
    opts = {"config": "", "target": "", "event": "", "mode": "text", "timeout": str(DEFAULT_TIMEOUT), "queue": ""}
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        name = key.lstrip("-").replace("-", "_")
        if arg in _OUTPUT_FLAGS:
            opts["mode"] = arg[2:]
        elif name in ("config", "target", "event", "mode", "timeout", "queue") and key.startswith("--"):
            if not eq:
                i += 1
                value = argv[i] if i < len(argv) else ""
            opts[name] = value
        elif key == "-c":
            i += 1
            opts["config"] = argv[i] if i < len(argv) else ""
        i += 1
    try:
        opts["timeout"] = str(max(0.05, float(opts["timeout"])))
    except ValueError:
        opts["timeout"] = str(DEFAULT_TIMEOUT)
    if not opts["config"]:
        opts["config"] = default_config_path()
    return opts


def read_stdin() -> bytes:
    """The whole payload (bounded); an oversized payload is drained and replaced by ``b""``."""
    chunks = []
    size = 0
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        size += len(chunk)
        if size <= MAX_STDIN:
            chunks.append(chunk)
    return b"".join(chunks) if size <= MAX_STDIN else b""


def request_daemon(path: str, request: dict[str, object], timeout: float) -> dict[str, object]:
    """Send one request and return the decoded response (raises ``OSError``/``ValueError``)."""
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(min(1.0, timeout))
        sock.connect(path)
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        sock.sendall(json.dumps(request, separators=(",", ":")).encode("utf-8") + b"\n")
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    response = json.loads(b"".join(chunks) or b"null")
    if not isinstance(response, dict):
        raise ValueError("hook daemon sent no answer")
    return response


def _load_inbox() -> dict[str, object]:
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(os.path.dirname(here), "capture", "_inbox.py")
    namespace: dict[str, object] = {"__name__": "paxm_capture_inbox", "__file__": path}
    with open(path, "rb") as handle:
        code = compile(handle.read(), path, "exec")
    exec(code, namespace)
    return namespace


def append_inbox(queue_path: str, event_id: str, target: str, event: str, raw: bytes, received_at: float) -> bool:
    """Store the raw payload durably (returns after COMMIT)."""
    append_raw = _load_inbox()["append_raw"]
    assert callable(append_raw)
    return bool(append_raw(queue_path, event_id, target, event, raw, received_at))


def daemon_command(config_path: str) -> list[str]:
    """The argv that starts the daemon with this interpreter (site enabled)."""
    return [sys.executable, "-m", "paxm_core.hooks.daemon", "--config", os.path.abspath(config_path)]


def start_daemon(config_path: str) -> int:
    """Start the daemon detached: new session, stdio on /dev/null, nothing inherited."""
    argv = daemon_command(config_path)
    env = dict(os.environ)
    env.pop("PAXM_INTEGRATION_OWNER", None)
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)


def run(argv: list[str], stdin_bytes: bytes | None = None) -> tuple[str, str]:
    """Handle one hook; returns ``(stdout_text, stderr_text)``.  Never raises."""
    out, err = "", ""
    try:
        opts = parse_args(argv)
        raw = read_stdin() if stdin_bytes is None else stdin_bytes
        captured_at = time.time()
        event_id = new_event_id()
        target = opts["target"] or "codex"
        event = opts["event"] or "user_input"
        request = {
            "v": PROTOCOL_VERSION,
            "event_id": event_id,
            "target": target,
            "event": event,
            "raw": raw.decode("utf-8", "replace"),
            "owner": os.environ.get("PAXM_INTEGRATION_OWNER", ""),
            "mode": opts["mode"],
            "captured_at": captured_at,
        }
        sock = socket_path(opts["config"])
        try:
            response: dict[str, object] | None = request_daemon(sock, request, float(opts["timeout"]))
        except (OSError, ValueError) as exc:
            response = None
            daemon_down = isinstance(exc, (FileNotFoundError, ConnectionRefusedError))
            queue = opts["queue"] or os.path.join(hooks_dir(opts["config"]), QUEUE_NAME)
            try:
                append_inbox(queue, event_id, target, event, raw, captured_at)
            except Exception as inbox_exc:  # fail open: the harness must never see a hook error
                err += f"paxm hook: event not captured: {inbox_exc}\n"
            if daemon_down:
                try:
                    start_daemon(opts["config"])
                except OSError as spawn_exc:
                    err += f"paxm hook: daemon not started: {spawn_exc}\n"
            else:
                err += f"paxm hook: daemon did not answer ({exc}); event kept in the inbox\n"
        if response is not None:
            output = response.get("output")
            if isinstance(output, str):
                out = output
            errors = response.get("errors")
            if isinstance(errors, list):
                err += "".join(f"paxm hook {message}\n" for message in errors)
    except BaseException as exc:  # noqa: BLE001 - the contract is "always exit 0"
        err += f"paxm hook: {type(exc).__name__}: {exc}\n"
    return out, err


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main() -> None:
    """Entry point: run, write stdout/stderr, exit 0 without interpreter teardown."""
    out, err = run(sys.argv[1:])
    try:
        if out:
            _write_all(1, (out if out.endswith("\n") else out + "\n").encode("utf-8", "replace"))
        if err:
            _write_all(2, err.encode("utf-8", "replace"))
    except OSError:
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
