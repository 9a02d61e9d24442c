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
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

__all__ = [
    "CACHE_ROOT",
    "ServerProcess",
    "free_port",
    "install_wheels",
    "missing",
    "provision_venv",
    "venv_python",
    "wait_http",
    "wheel_provider_round_trip",
    "workspace_wheels",
]

# Resolved at import time: test fixtures repoint HOME at a temp dir, but the cache must be shared.
CACHE_ROOT = Path(os.environ.get("PAXM_TEST_CACHE") or Path.home() / ".cache" / "paxm-tests")


def missing(reason: str) -> None:
    """Skip outside CI, fail in CI: a real-server test never silently passes without its server."""
    if os.environ.get("CI"):
        pytest.fail(f"CI requires this dependency: {reason}")
    pytest.skip(reason)


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
        raise AssertionError("unreachable")
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
        wait_http(url, timeout, self)

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

    def group_alive(self, pgid: int) -> bool:
        """True while any process of group ``pgid`` still exists."""
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def wait_http(url: str, timeout: float, server: ServerProcess | None = None) -> None:
    """Poll ``url`` until it answers HTTP 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server is not None and server.proc is not None and server.proc.poll() is not None:
            raise RuntimeError(f"server exited rc={server.proc.returncode}:\n{server.log_tail()}")
        try:
            # generous per-request timeout: a loaded machine may stall a starting server's event loop
            with urllib.request.urlopen(url, timeout=10) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    tail = server.log_tail() if server is not None else ""
    raise TimeoutError(f"{url} did not answer within {timeout}s\n{tail}")


if __name__ == "__main__":  # pragma: no cover - manual warm-up: python -m paxm_contracttest.servers NAME VER REQ...
    print(provision_venv(sys.argv[1], sys.argv[2], sys.argv[3:]))


#: workspace root -> the directory its wheels were built into by this process
_WHEELS: dict[Path, Path] = {}


def workspace_wheels(root: Path) -> Path:
    """Every distribution of the uv workspace at ``root``, built as wheels once per test process.

    Several suites install from wheels (paxm alone, paxm with one provider or another); building
    the whole workspace costs about 20 CPU-seconds, so they share one build, in a private temp
    directory removed at exit.  Callers only read it (``pip install --find-links``).
    """
    root = root.resolve()
    if root not in _WHEELS:
        uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
        dist = Path(tempfile.mkdtemp(prefix="paxm-wheels-"))
        atexit.register(shutil.rmtree, dist, True)
        subprocess.run([uv, "build", "--all-packages", "--wheel", "-o", str(dist), "-q"], cwd=root, check=True)
        _WHEELS[root] = dist
    return _WHEELS[root]


def install_wheels(root: Path, work: Path, packages: Sequence[str], install: Sequence[str]) -> Path:
    """Pip-install ``install`` from the workspace's wheels into a fresh venv in ``work/venv``.

    The user's install path: wheels built with ``uv build --wheel`` (:func:`workspace_wheels`,
    shared by the session; ``packages``, the distributions needed, are all among them), a plain
    ``python -m venv`` and ``pip install --find-links`` (no index needed for paxm's own wheels).
    Returns the venv's ``bin/`` directory.
    """
    dist, venv = workspace_wheels(root), work / "venv"
    wanted = {p.replace("-", "_") for p in packages}
    built = {w.name.split("-", 1)[0] for w in dist.glob("*.whl")}
    if not wanted <= built:
        raise RuntimeError(f"no wheel built for {sorted(wanted - built)} in {dist}")
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--find-links", str(dist)]
    subprocess.run([*pip, *install], check=True, timeout=600)
    return venv / "bin"


def wheel_provider_round_trip(
    root: Path,
    work: Path,
    home: Path,
    *,
    provider: str,
    distribution: str,
    provider_types: Sequence[str],
    base_url: str,
) -> None:
    """A server-backed provider from built wheels: plugins, refused and real setup, remember, recall, doctor.

    Installs ``paxm`` and ``distribution`` (plus the SQLite provider paxm depends on) from wheels
    into a fresh venv (:func:`install_wheels`), then, as a user with ``home``: ``paxm plugins``
    lists the distribution with ``provider_types``; setup against a dead port is refused and
    writes no config; setup against ``base_url`` ensures the provider; a remembered text is
    recalled from it; ``config doctor`` reports it healthy.  Fails with the command's output.
    """
    import json

    paxm = str(
        install_wheels(root, work, ("paxm", "paxm-provider-sqlite", distribution), ("paxm", distribution)) / "paxm"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "cfg"),
        "XDG_STATE_HOME": str(home / "state"),
    }
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
