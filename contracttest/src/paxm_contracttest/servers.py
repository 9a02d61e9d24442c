"""Helpers for tests that run a real backend server as a subprocess from its own cached venv.

Real backends (MemOS, OpenViking, ...) pin conflicting dependencies, so each runs from a venv of its
own, built once per pinned version under ``~/.cache/paxm-tests/venvs/<name>-<version>``.  Building
happens in a temp dir beside the target and is renamed into place under an flock, so parallel test
runs install once and a half-built venv is never used.  Servers run in their own process group and
are stopped with SIGTERM, then SIGKILL of the whole group, so nothing (postgres included) leaks.

Stdlib only: importing this module must stay cheap.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import pytest

from paxm_contracttest.harness import require as missing

__all__ = [
    "CACHE_ROOT",
    "BackendServer",
    "BackgroundRun",
    "ServerProcess",
    "backend_fixture",
    "cancel_prefetch",
    "closing_fixture",
    "fake_openai",
    "free_port",
    "install_wheels",
    "missing",
    "prefetch_wheel_venvs",
    "provision_venv",
    "recv_line",
    "set_background_niced",
    "set_wheel_venv_root",
    "user_env",
    "venv_python",
    "wheel_provider_round_trip",
    "wheel_venv",
    "workspace_wheels",
]

# Resolved at import time: test fixtures repoint HOME at a temp dir, but the cache must be shared.
CACHE_ROOT = Path(os.environ.get("PAXM_TEST_CACHE") or Path.home() / ".cache" / "paxm-tests")


def venv_python(venv: Path) -> Path:
    """The interpreter inside ``venv``."""
    return venv / "bin" / "python"


def provision_venv(
    name: str, version: str, requirements: Sequence[str], *, python: str = "3.11", timeout: float = 1800
) -> Path:
    """Return a venv holding exactly ``requirements``, building it once under the shared cache.

    ``PAXM_TEST_NO_INSTALL=1`` turns a missing venv into a skip (or a failure in CI) instead of a
    multi-minute install.
    """
    root = CACHE_ROOT / "venvs"
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{name}-{version}"
    marker = target / ".paxm-complete"
    wanted = "\n".join(requirements) + "\n"
    if _built(marker, wanted):
        return target
    if os.environ.get("PAXM_TEST_NO_INSTALL") == "1":
        missing(f"{target} is not built and PAXM_TEST_NO_INSTALL=1")
    uv = shutil.which("uv")
    if uv is None:
        missing("uv is not on PATH (needed to build the test venv)")
    with open(root / f".{name}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _built(marker, wanted):
            return target
        build = root / f".{name}-{version}.build-{os.getpid()}"
        shutil.rmtree(build, ignore_errors=True)
        try:
            # --relocatable: console scripts find their interpreter relatively, so the rename is safe.
            subprocess.run(
                [uv, "venv", "--relocatable", "--python", python, str(build)],
                check=True,
                capture_output=True,
                timeout=300,
            )
            subprocess.run(
                [uv, "pip", "install", "--python", str(venv_python(build)), *requirements],
                check=True,
                capture_output=True,
                timeout=timeout,
            )
            (build / ".paxm-complete").write_text(wanted)
            shutil.rmtree(target, ignore_errors=True)
            build.rename(target)
        except subprocess.CalledProcessError as exc:
            tail = (exc.stderr or b"").decode(errors="replace")[-3000:]
            raise RuntimeError(f"building {target} failed:\n{tail}") from exc
        finally:
            shutil.rmtree(build, ignore_errors=True)
    return target


def _built(marker: Path, wanted: str) -> bool:
    """The venv is complete and holds exactly the requested requirements (else it is rebuilt)."""
    try:
        return marker.read_text() == wanted
    except OSError:
        return False


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServerProcess:
    """A server subprocess in its own session (process group), with its output in ``log``."""

    def __init__(
        self, cmd: Sequence[str], *, log: Path, env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        self.cmd = [str(c) for c in cmd]
        self.log = log
        self._env = {**os.environ, **(env or {})}
        if "PYTHONDONTWRITEBYTECODE" not in (env or {}):
            # some CI images set it: every start of a server would then compile its whole import
            # graph from source again (about half of openviking-server's 40 CPU-seconds start);
            # the venvs are caches of ours, so the first start leaves the bytecode for the next
            self._env.pop("PYTHONDONTWRITEBYTECODE", None)
        self._cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        """(Re)start the process; output is appended to the log."""
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.cmd, env=self._env, cwd=self._cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def wait_http(self, url: str, timeout: float) -> None:
        """Wait until ``url`` answers 200, failing early (with the log) if the process dies."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"server exited rc={self.proc.returncode}:\n{self.log_tail()}")
            try:
                # generous per-request timeout: a loaded machine may stall a starting server's event loop
                with urllib.request.urlopen(url, timeout=10) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        raise TimeoutError(f"{url} did not answer within {timeout}s\n{self.log_tail()}")

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the group, wait ``grace`` seconds, then SIGKILL whatever is left of the group."""
        proc = self.proc
        if proc is None:
            return
        self.proc = None
        try:
            pgid = os.getpgid(proc.pid)
        except ProcessLookupError:
            pgid = proc.pid
        if proc.poll() is None:
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        # Children (postgres, workers) may outlive the leader: kill the whole group regardless.
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.poll() is None:
            proc.wait(10)


class BackendServer:
    """A real backend server on 127.0.0.1 that answers ``GET /health``; restartable on the same port and data.

    A subclass picks its command and environment and calls :meth:`launch` from its constructor.

    :param workdir: the server's working directory (its log is ``server.log`` there).
    """

    #: seconds a stop waits after SIGTERM before killing the server's process group
    grace: float = 20.0

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def launch(self, argv: Sequence[str], env: Mapping[str, str], *, timeout: float = 300) -> None:
        """Start ``argv`` in :attr:`workdir` and wait until it is healthy; a server that never
        comes up is stopped, so it cannot outlive the test run."""
        self._proc = ServerProcess(list(argv), log=self.workdir / "server.log", env=dict(env), cwd=self.workdir)
        try:
            self._proc.wait_http(self.url + "/health", timeout)
        except BaseException:
            self.stop()
            raise

    def restart(self) -> None:
        """Stop gracefully (SIGTERM) and start again on the same data and port."""
        self._proc.stop(grace=self.grace)
        self._proc.start()
        self._proc.wait_http(self.url + "/health", 300)

    def stop(self) -> None:
        self._proc.stop(grace=self.grace)


@pytest.fixture(scope="session")
def fake_openai(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One fake OpenAI embeddings/chat endpoint (``fake_openai.py``) per test session, for a real
    backend server to call (import it into a ``conftest.py``); yields its ``/v1`` URL."""
    port = free_port()
    proc = ServerProcess(
        [sys.executable, str(Path(__file__).with_name("fake_openai.py")), str(port)],
        log=tmp_path_factory.mktemp("fakeai") / "fake_openai.log",
        env={"FAKEAI_DIMS": "256"},
    )
    proc.wait_http(f"http://127.0.0.1:{port}/v1/models", 15)
    yield f"http://127.0.0.1:{port}/v1"
    proc.stop(grace=5)


_Backend = TypeVar("_Backend", bound=BackendServer)


def backend_fixture(name: str, start: Callable[[Path, str], _Backend], doc: str) -> Any:
    """A session fixture ``name``: ``start(workdir, fake_openai_url)`` once, stopped at the end.

    Assign it in a ``conftest.py`` that also imports :func:`fake_openai`:
    ``memos = backend_fixture("memos", MemOSServer, "The MemOS server shared by the session.")``.
    """

    def fixture(tmp_path_factory: pytest.TempPathFactory, fake_openai: str) -> Iterator[_Backend]:
        server = start(tmp_path_factory.mktemp(name), fake_openai)
        yield server
        server.stop()

    fixture.__doc__ = doc
    return pytest.fixture(scope="session", name=name)(fixture)


class _Closable(Protocol):
    def close(self) -> None: ...


_Closing = TypeVar("_Closing", bound=_Closable)


def closing_fixture(name: str, factory: Callable[[], _Closing], doc: str) -> Any:
    """A fixture ``name``: a fresh ``factory()`` for each test, closed after it.

    Assign it in a test module or ``conftest.py``: ``zep = closing_fixture("zep", ZepFake, "...")``.
    """

    def fixture() -> Iterator[_Closing]:
        server = factory()
        yield server
        server.close()

    fixture.__doc__ = doc
    return pytest.fixture(name=name)(fixture)


def recv_line(conn: socket.socket) -> bytes:
    """What ``conn`` sends up to and including its first newline (less when it closes first).

    How a fake daemon reads one request of the newline-framed socket protocol.
    """
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


if __name__ == "__main__":  # pragma: no cover - manual warm-up: python -m paxm_contracttest.servers NAME VER REQ...
    print(provision_venv(sys.argv[1], sys.argv[2], sys.argv[3:]))


#: workspace root -> the directory its wheels were built into by this process
_WHEELS: dict[Path, Path] = {}
#: (workspace root, requirements) -> the job installing them into a venv of their own
_WHEEL_VENVS: dict[tuple[Path, tuple[str, ...]], _Job[Path]] = {}
#: held while the wheels are built (prefetch threads and the test thread need the same build)
_BUILD_LOCK = threading.Lock()
#: guards ``_WHEEL_VENVS`` (held only for a lookup, never during a build)
_MAP_LOCK = threading.Lock()
#: subprocesses started in the background (prefetch jobs), killed by :func:`cancel_prefetch`
_BACKGROUND: set[subprocess.Popen[bytes]] = set()
#: the wheel-build and venv-install ones among them
_WHEEL_PROCS: set[subprocess.Popen[bytes]] = set()
#: background runs whose result nobody has collected yet
_RUNS: set[BackgroundRun] = set()
#: the ``nice`` prefix of background work: it runs on the core the one-at-a-time test run leaves idle
_NICE = ("nice", "-n", "19") if shutil.which("nice") else ()
#: whether background work started from now on is niced (:func:`set_background_niced`)
_NICED = [True]
#: set once a test waits for a wheel venv: the wheel work left is then what the run waits for
_WHEELS_AWAITED = threading.Event()
#: at most this many background venv installs at once (two cores: more only thrash)
_WHEEL_SLOTS = threading.BoundedSemaphore(2)
#: where wheel venvs go: the session's pytest basetemp when known (kept and pruned by pytest's
#: retention, like any tmp_path), else a temp dir removed at exit
_VENV_ROOT: list[Path] = []

T = TypeVar("T")


class _Job(Generic[T]):
    """A function run once, in a thread of its own or in the first caller that needs its result."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._lock = threading.Lock()
        self._done = False
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Run the work in a daemon thread (its errors are kept for :meth:`result`, never raised there)."""
        self._thread = threading.Thread(target=self._run, name="paxm-test-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with self._lock:
            if self._done:
                return
            try:
                self._value = self._work()
            except BaseException as exc:  # kept: the test that needs the result reports it
                self._error = exc
            self._done = True

    @property
    def done(self) -> bool:
        """The work has finished (its value or error is ready)."""
        return self._done

    def result(self) -> T:
        """The work's value (running it here if no thread has), or its exception re-raised."""
        self._run()  # waits for a running thread through the lock
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def _run_tracked(argv: Sequence[str], *, background: bool, timeout: float, cwd: Path | None = None) -> None:
    """``subprocess.run(argv, check=True)``; in the background niced, killable, its output kept.

    A background command's output goes to a temp file (it would otherwise land in whichever
    test's capture is active) and is the message of the error it fails with.
    """
    if not background:
        subprocess.run(argv, check=True, timeout=timeout, cwd=cwd)
        return
    nice = () if _WHEELS_AWAITED.is_set() else _nice()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [*nice, *argv], cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
        _BACKGROUND.add(proc)
        _WHEEL_PROCS.add(proc)
        try:
            returncode = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise
        finally:
            _BACKGROUND.discard(proc)
            _WHEEL_PROCS.discard(proc)
        if returncode != 0:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-4000:]
            raise RuntimeError(f"{' '.join(argv)} exited {returncode}:\n{tail}")


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _boost(proc: subprocess.Popen[Any]) -> None:
    """Back to the test process's CPU priority, the whole process group (a test now waits for it).

    Raising priority needs privilege (CI runs as root); without it the work stays niced.
    """
    try:
        os.setpriority(os.PRIO_PGRP, proc.pid, os.getpriority(os.PRIO_PROCESS, 0))
    except OSError:
        pass


def set_background_niced(niced: bool) -> None:
    """Start background work at the lowest CPU priority (the default), or at the test process's.

    Niced work only gets CPU that nothing else wants: right for a one-at-a-time test run, which
    leaves a core idle.  In a parallel run every core runs a test worker, so niced work would get
    almost none until a test waits for it, and a command with time limits of its own (the
    benchmark smoke run waits 30 s for a daemon to start) would miss them.
    """
    _NICED[0] = niced


def _nice() -> tuple[str, ...]:
    return _NICE if _NICED[0] else ()


def cancel_prefetch() -> None:
    """Kill every background subprocess still running (the session is over; nobody waits for it)."""
    for run in list(_RUNS):  # their output files closed too
        run.cancel()
        run.result()
    for proc in list(_BACKGROUND):
        if proc.poll() is None:
            _kill_group(proc)


def workspace_wheels(root: Path, *, background: bool = False) -> Path:
    """Every distribution of the uv workspace at ``root``, built as wheels once per test process.

    Several suites install from wheels (paxm alone, paxm with one provider or another); building
    the whole workspace costs about 20 CPU-seconds, so they share one build, in a private temp
    directory removed at exit.  Callers only read it (``pip install --find-links``).
    """
    root = root.resolve()
    if not background and root not in _WHEELS:
        _await_wheels()  # a background build may hold the lock: the test waits for it now
    with _BUILD_LOCK:
        if root not in _WHEELS:
            uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
            dist = Path(tempfile.mkdtemp(prefix="paxm-wheels-"))
            atexit.register(shutil.rmtree, dist, True)
            _run_tracked(
                [uv, "build", "--all-packages", "--wheel", "-o", str(dist), "-q"],
                background=background,
                timeout=900,
                cwd=root,
            )
            _WHEELS[root] = dist
        return _WHEELS[root]


def _build_wheel_venv(root: Path, install: tuple[str, ...], *, background: bool) -> Path:
    dist = workspace_wheels(root, background=background)
    if _VENV_ROOT:
        venv = Path(tempfile.mkdtemp(prefix="wheel-venv-", dir=_VENV_ROOT[0]))
    else:
        venv = Path(tempfile.mkdtemp(prefix="paxm-wheel-venv-"))
        atexit.register(shutil.rmtree, venv, True)
    if background:
        _WHEEL_SLOTS.acquire()
    try:
        _run_tracked([sys.executable, "-m", "venv", str(venv)], background=background, timeout=300)
        pip = [str(venv / "bin" / "pip"), "install", "-q", "--find-links", str(dist)]
        _run_tracked([*pip, *install], background=background, timeout=900)
    finally:
        if background:
            _WHEEL_SLOTS.release()
    return venv


def wheel_venv(root: Path, install: Sequence[str]) -> Path:
    """A fresh venv into which plain pip installed ``install`` from the workspace's wheels.

    The user's install path: wheels built with ``uv build --wheel`` (:func:`workspace_wheels`), a
    plain ``python -m venv`` and ``pip install --find-links`` (no index needed for paxm's own
    wheels).  One venv per requirement set per test process: the tests only run its console
    scripts (their state goes to the HOME they pass), so tests asking for the same set share it.
    A set a selected test declared with ``@pytest.mark.prefetch_wheel_venv`` is usually built
    already (:func:`prefetch_wheel_venvs`); any other is built here.
    """
    key = (root.resolve(), tuple(install))
    with _MAP_LOCK:
        job = _WHEEL_VENVS.setdefault(key, _Job(lambda: _build_wheel_venv(*key, background=False)))
    if not job.done:
        _await_wheels()
    return job.result()


def _await_wheels() -> None:
    """A test waits for wheel work: what is left of it runs at the test's priority from now on."""
    _WHEELS_AWAITED.set()
    for proc in list(_WHEEL_PROCS):
        _boost(proc)


def set_wheel_venv_root(directory: Path) -> None:
    """Put wheel venvs under ``directory`` (the session's basetemp: no removal at exit to wait for)."""
    _VENV_ROOT[:] = [directory]


def prefetch_wheel_venvs(root: Path, sets: Sequence[Sequence[str]]) -> None:
    """Start building the wheels and then a venv per requirement set in the background.

    One thread per set at the lowest CPU priority (the wheel build is shared under a lock), so
    the installs run on the core a one-at-a-time test run leaves idle; :func:`wheel_venv` then
    waits for the set it needs, or builds it itself if its job has not started.
    """
    for install in sets:
        key = (root.resolve(), tuple(install))
        with _MAP_LOCK:
            if key in _WHEEL_VENVS:
                continue
            job = _WHEEL_VENVS[key] = _Job(lambda key=key: _build_wheel_venv(*key, background=True))  # type: ignore[misc]
        job.start()


class BackgroundRun:
    """A command started early, at the lowest CPU priority, whose output a test collects later.

    For gates that only read the repository (mypy, a benchmark smoke run) and so give the same
    answer whenever they run: started when the session is collected, they overlap the tests
    before them instead of adding their wall time.  Output goes to private temp files.
    """

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float) -> None:
        self.argv = [str(a) for a in argv]
        self.timeout = timeout
        self._deadline = time.monotonic() + timeout
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [*_nice(), *self.argv],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            start_new_session=True,
        )
        _BACKGROUND.add(self._proc)
        _RUNS.add(self)
        self._result: subprocess.CompletedProcess[str] | None = None

    def result(self) -> subprocess.CompletedProcess[str]:
        """Wait for the command (within its timeout from its start) and return what it printed.

        Past the timeout the process group is killed and ``subprocess.TimeoutExpired`` raised
        (once; later calls return the killed run).
        """
        if self._result is None:
            _boost(self._proc)  # a test waits for it now
            timed_out = None
            try:
                self._proc.wait(max(0.0, self._deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                _kill_group(self._proc)
                timed_out = exc
            _BACKGROUND.discard(self._proc)
            _RUNS.discard(self)
            outputs = []
            for f in (self._out, self._err):
                f.seek(0)
                outputs.append(f.read().decode(errors="replace"))
                f.close()
            self._result = subprocess.CompletedProcess(self.argv, self._proc.returncode, *outputs)
            if timed_out is not None:
                raise timed_out
        return self._result

    def cancel(self) -> None:
        """Kill the command and its process group if it still runs (:meth:`result` then reports that)."""
        if self._proc.poll() is None:
            _kill_group(self._proc)


def install_wheels(root: Path, packages: Sequence[str], install: Sequence[str]) -> Path:
    """The ``bin/`` of a :func:`wheel_venv` holding ``install``; ``packages`` must all be built.

    ``packages`` are the workspace distributions the install needs (checked against the build,
    so a distribution missing from the workspace fails here rather than as a pip resolution).
    """
    venv = wheel_venv(root, install)  # first: waiting for it also raises the background's priority
    dist = workspace_wheels(root)
    wanted = {p.replace("-", "_") for p in packages}
    built = {w.name.split("-", 1)[0] for w in dist.glob("*.whl")}
    if not wanted <= built:
        raise RuntimeError(f"no wheel built for {sorted(wanted - built)} in {dist}")
    return venv / "bin"


def user_env(home: Path) -> dict[str, str]:
    """The whole environment of a fresh user with ``home``: ``PATH``, ``HOME`` and XDG dirs under it."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "cfg"),
        "XDG_STATE_HOME": str(home / "state"),
    }


def wheel_provider_round_trip(
    root: Path,
    home: Path,
    *,
    provider: str,
    distribution: str,
    provider_types: Sequence[str],
    base_url: str,
) -> None:
    """A server-backed provider from built wheels: plugins, refused and real setup, remember, recall, doctor.

    Installs ``paxm`` and ``distribution`` (plus the SQLite provider paxm depends on) from wheels
    into a venv of their own (:func:`install_wheels`), then, as a user with ``home``: ``paxm plugins``
    lists the distribution with ``provider_types``; setup against a dead port is refused and
    writes no config; setup against ``base_url`` ensures the provider; a remembered text is
    recalled from it; ``config doctor`` reports it healthy.  Fails with the command's output.
    """
    import json

    paxm = str(install_wheels(root, ("paxm", "paxm-provider-sqlite", distribution), ("paxm", distribution)) / "paxm")
    env = user_env(home)
    config = home / "config.yaml"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [paxm, "--config", str(config), *args], env=env, capture_output=True, text=True, timeout=120
        )

    listing = run("plugins", "--json")
    assert listing.returncode == 0, listing.stderr
    plugin = next(p for p in json.loads(listing.stdout)["plugins"] if p["name"] == provider)
    assert plugin["distribution"] == distribution and plugin["providers"] == list(provider_types), plugin

    refused = run("setup", "--yes", "--provider", provider, "--base-url", "http://127.0.0.1:9")
    assert refused.returncode != 0 and not config.exists(), refused.stdout + refused.stderr

    setup = run("setup", "--yes", "--provider", provider, "--user-id", "todd", "--base-url", base_url)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert f"ensured {provider}" in setup.stdout
    text = f"wheel install marker pelican {provider}"
    stored = run("remember", "--text", text)
    assert stored.returncode == 0, stored.stderr
    recalled = run("recall", "--query", "wheel install marker pelican", "--json")
    assert recalled.returncode == 0, recalled.stderr
    hits = [h for h in json.loads(recalled.stdout)["hits"] if h["provider"] == provider]
    assert hits and hits[0]["text"] == text, recalled.stdout
    doctor = run("config", "doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert any(r.get("provider") == provider and r.get("ok") for r in json.loads(doctor.stdout)), doctor.stdout
