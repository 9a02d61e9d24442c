"""One kit for every real-binary harness test and the hook-latency benchmark.

A harness is described once, as data (:class:`Harness`: the pinned npm packages, the binary,
how to run one prompt non-interactively, which fake model API it speaks, its environment and
its own config); the rest is the same for every harness:

* :func:`install` installs the pinned packages once (the kit's one npm installer) and checks
  the binary runs; anything missing skips the test, or fails it when ``CI`` is set;
* :class:`HarnessBox` is a private HOME + workspace + paxm config (:class:`PaxmSandbox`) that
  starts the harness's fake model server (:meth:`HarnessBox.fake`) and runs one turn
  (:meth:`HarnessBox.turn`) against it;
* :func:`model_inputs` is the text each model request showed the model, whatever the API;
* the shared flows every harness's end-to-end file runs: :func:`capture_then_recall` (a turn,
  its capture, the recall in the next session), :func:`cross_harness` (a decision one harness
  captured reaches another) and :func:`fail_open_when_paxm_gone`;
  for harnesses on a Chat Completions fake also :func:`daemon_down_turn`,
  :func:`broken_config_turn`, :func:`hanging_provider_turn` and
  :func:`generated_file_outlives_paxm` (each a :func:`quiet_turn`: the turn completes and no
  request holds paxm's envelope or noise).

The descriptions of the ten harnesses are in :mod:`paxm_contracttest.harness.harnesses`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paxm_contracttest.harness import _slug, node24_bin, npm_install_into, require
from paxm_contracttest.model_input import PASSIVE_CLOSE, PASSIVE_OPEN, assert_no_hook_noise, recalled
from paxm_contracttest.sandbox import PaxmSandbox, run_command

__all__ = [
    "HANG_PROVIDER",
    "BROKEN_CONFIG",
    "add_hanging_provider",
    "backfilled_then_skipped_live",
    "broken_config_turn",
    "daemon_down_turn",
    "daemon_held_off",
    "daemon_refused_config",
    "drained_on_start",
    "hanging_provider",
    "hanging_provider_turn",
    "Harness",
    "HarnessBox",
    "Installed",
    "Turn",
    "capture_then_recall",
    "cross_harness",
    "fail_open_when_paxm_gone",
    "generated_file_outlives_paxm",
    "install",
    "installed_fixture",
    "ok",
    "model_inputs",
    "model_requests",
    "paxm_removed_midway",
    "quiet_turn",
    "stale_paths",
    "stamped_run",
]

#: what the fake models reply (``[marker-seen]`` / ``[marker-absent]`` follows it when a marker is set)
REPLY = "Noted, I will remember that."


@dataclass
class Turn:
    """One finished non-interactive run of a harness."""

    returncode: int
    stdout: str
    stderr: str
    wall: float
    reply: str = ""
    #: hook runs the harness itself reports (``hookEvent``, ``durationMs`` ...), where it does
    hooks: list[dict[str, Any]] = field(default_factory=list)
    #: anything else a harness's runner reads from the run (Claude's ``init`` event ...)
    extra: dict[str, Any] = field(default_factory=dict)

    def durations(self, event: str) -> list[int]:
        """``durationMs`` of every hook the harness ran for ``event``."""
        return [int(h.get("durationMs", -1)) for h in self.hooks if h.get("hookEvent") == event]


@dataclass(frozen=True)
class Installed:
    """An installed harness: its executable, the Node ``bin`` it needs first on ``PATH`` (or
    ``None``), and the install directories of its extra packages by name."""

    binary: Path
    node_bin: Path | None = None
    extras: Mapping[str, Path] = field(default_factory=dict)


Runner = Callable[["HarnessBox", list[str], dict[str, str], float], Turn]


@dataclass(frozen=True)
class Harness:
    """What the kit needs to know about one harness: data, plus a few small callables.

    :param name: the short name (benchmark runner, test ids): ``claude``, ``qwen`` ...
    :param packages: the pinned npm specs installed together (``pkg@version``).
    :param api: the fake model API it speaks: ``anthropic``, ``responses``, ``chat``,
        ``chat-tools`` (Chat Completions offering the harness's own shell tool) or ``gemini``.
    :param argv: its arguments for one prompt; ``{prompt}`` and ``{root}`` (the sandbox) are replaced.
    :param agent: the ``paxm setup --agent`` name (default: ``name``).
    :param cache: its entry in the npm test cache, which ``.ci/warm_harnesses.py`` fills
        (default: the first package spec as a file name, ``@scope/pkg@1.0`` -> ``scope-pkg-1.0``).
    :param binary: the executable, relative to the install directory (default:
        ``node_modules/.bin/<name>``).
    :param env: its extra environment; ``{url}`` is replaced by the fake server's URL and
        ``{npm_cache}`` by the npm test cache.
    :param node24: it needs Node >= 22 (the pinned Node 24 goes first on ``PATH``).
    :param extras: more npm installs it needs beside it: name -> (cache entry, specs, probe).
    :param prepare: writes the user's own harness config when the sandbox is made (before
        ``paxm setup`` merges into it; uninstall must give it back).
    :param configure: points the harness's config at the fake's URL (runs before every turn,
        so the URL of the current fake wins; it must keep paxm's entries).
    :param reply: the model's final answer from a finished run.
    :param run: a runner of its own (a harness whose output is a stream the kit reads as it
        arrives); default: run to the end and parse ``reply``.
    :param native_config: the file paxm's hook commands are installed in (fail-open tests
        make their paths stale there).
    :param envelope: the recall envelope's opening and closing tags as the model sees them.
    """

    name: str
    packages: tuple[str, ...]
    api: str
    argv: tuple[str, ...]
    agent: str = ""
    cache: str = ""
    binary: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    node24: bool = False
    extras: Mapping[str, tuple[str, tuple[str, ...], str]] = field(default_factory=dict)
    prepare: Callable[[HarnessBox], None] | None = None
    configure: Callable[[HarnessBox, str], None] | None = None
    reply: Callable[[HarnessBox, str], str] = lambda _box, stdout: stdout.strip()
    run: Runner | None = None
    native_config: Callable[[HarnessBox], Path] | None = None
    envelope: tuple[str, str] = (PASSIVE_OPEN, PASSIVE_CLOSE)

    def __post_init__(self) -> None:
        # the defaults derive from other fields (frozen: set once, here)
        defaults = {"agent": self.name, "cache": _slug(self.packages[0]), "binary": f"node_modules/.bin/{self.name}"}
        for key, value in defaults.items():
            if not getattr(self, key):
                object.__setattr__(self, key, value)


def install(harness: Harness) -> Installed:
    """Install ``harness``'s pinned packages once and check its binary answers ``--version``.

    Whatever is missing (npm, the registry, a working binary) goes through :func:`require`: a
    skip with the reason outside CI, a failure when ``CI`` is set, so a real-binary test never
    silently vanishes from CI.
    """
    try:
        node = node24_bin() if harness.node24 else None
        root = npm_install_into(harness.cache, ["--no-save", *harness.packages], harness.binary, path_prefix=node)
        extras = {
            name: npm_install_into(cache, list(specs), probe) for name, (cache, specs, probe) in harness.extras.items()
        }
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        require(f"installing {' '.join(harness.packages)} failed: {exc}")
    binary = root / harness.binary
    if not binary.is_file() or not os.access(binary, os.X_OK):
        require(f"the {harness.name} install has no executable at {binary}")
    env = dict(os.environ)
    if node is not None:
        env["PATH"] = f"{node}{os.pathsep}{env.get('PATH', '')}"
    try:
        version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        require(f"{binary} --version could not run: {exc}")
    if version.returncode != 0:
        require(f"{binary} --version failed ({version.returncode}): {version.stderr.strip()[:400]}")
    return Installed(binary, node, extras)


#: the fake model server of each API: (module under ``paxm_contracttest.fake_models``, class)
_FAKES = {
    "anthropic": ("anthropic", "FakeAnthropic"),
    "responses": ("responses", "FakeResponses"),
    "chat": ("chat_completions", "FakeOpenAI"),
    "chat-tools": ("chat_tools", "FakeChat"),
    "gemini": ("gemini", "FakeGemini"),
}


def _fake_class(api: str) -> Any:
    import importlib

    if api not in _FAKES:
        raise ValueError(f"unknown fake model API {api!r}")
    module, name = _FAKES[api]
    return getattr(importlib.import_module(f"paxm_contracttest.fake_models.{module}"), name)


def installed_fixture(*harnesses: Harness) -> Any:
    """A session fixture giving ``(harness, installed)``, parametrized over ``harnesses``
    (releases of one harness, or several harnesses), each installed once (see :func:`install`)."""
    import pytest

    @pytest.fixture(scope="session", params=harnesses, ids=[h.cache for h in harnesses])
    def installed(request: pytest.FixtureRequest) -> tuple[Harness, Installed]:
        harness: Harness = request.param
        return harness, install(harness)

    return installed


def model_requests(fake: Any) -> list[Any]:
    """The requests of ``fake`` that are turns of the agent (not title or side questions)."""
    if hasattr(fake, "agent_steps"):
        return list(fake.agent_steps())
    if hasattr(fake, "responses"):
        return list(fake.responses())
    return list(fake.messages()) if hasattr(fake, "messages") else []


def model_inputs(fake: Any) -> list[str]:
    """What each agent request of ``fake`` showed the model, as text, in arrival order."""
    from paxm_contracttest.fake_models.responses import input_text

    out = []
    for request in model_requests(fake):
        if hasattr(request, "user_text"):
            out.append(str(request.user_text()))
        elif hasattr(fake, "responses"):
            out.append(input_text(request))
        else:
            from paxm_contracttest.harness.claude import model_text

            out.append(model_text(request))
    return out


class HarnessBox(PaxmSandbox):
    """A private HOME, workspace and paxm config, and one harness to run in them."""

    def __init__(self, root: Path, harness: Harness, installed: Installed, *, config: Path | None = None) -> None:
        super().__init__(root, config=config)
        self.harness = harness
        self.installed = installed
        self.agent = harness.agent
        if harness.prepare is not None:
            harness.prepare(self)

    def path_prefix(self) -> str | None:
        """The harness's Node 24 ``bin`` and its own ``bin`` go first on ``PATH`` (paxm setup finds it)."""
        binary_dir = self.installed.binary.parent if self.installed.binary.is_absolute() else None
        parts = [str(p) for p in (self.installed.node_bin, binary_dir) if p is not None]
        return os.pathsep.join(parts)

    def setup(self, *more_agents: str) -> None:
        """Install paxm for this harness (and ``more_agents``) with the SQLite provider."""
        agents = [a for name in (self.harness.agent, *more_agents) for a in ("--agent", name)]
        self.paxm("setup", "--yes", *agents, "--provider", "sqlite")

    def uninstall(self) -> None:
        """``paxm uninstall`` for this harness."""
        self.paxm("uninstall", "--agent", self.harness.agent, "--yes")

    @contextmanager
    def fake(self, name: str = "requests", **options: Any) -> Iterator[Any]:
        """The harness's fake model server (``marker``, ``hang`` ... as its API takes them)."""
        with _fake_class(self.harness.api)(self.root / f"{name}.jsonl", **options) as fake:
            self.fake_url = str(fake.url)
            yield fake

    def argv(self, prompt: str, *extra: str) -> list[str]:
        """The command line of one turn."""
        args = [a.replace("{prompt}", prompt).replace("{root}", str(self.root)) for a in self.harness.argv]
        return [str(self.installed.binary), *args, *extra]

    def turn_env(self, url: str = "", **extra: str) -> dict[str, str]:
        """The sandbox environment of one turn against the fake at ``url``."""
        from paxm_contracttest.harness import npm_cache_dir

        url = url or getattr(self, "fake_url", "")
        values = {
            k: v.replace("{url}", url).replace("{npm_cache}", str(npm_cache_dir())) for k, v in self.harness.env.items()
        }
        return self.env(**values, **extra)

    def point_at(self, url: str) -> None:
        """Point the harness's own config at the fake model at ``url`` (every turn does)."""
        if self.harness.configure is not None:
            self.harness.configure(self, url)

    def turn(self, fake: Any, prompt: str, *extra: str, timeout: float = 240, **env: str) -> Turn:
        """One non-interactive turn in the workspace against ``fake``."""
        self.point_at(str(fake.url))
        argv, environ = self.argv(prompt, *extra), self.turn_env(str(fake.url), **env)
        if self.harness.run is not None:
            return self.harness.run(self, argv, environ, timeout)
        started = time.monotonic()
        done = subprocess.run(
            argv,
            cwd=self.workspace,
            env=environ,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        turn = Turn(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
        turn.reply = self.harness.reply(self, done.stdout)
        return turn

    def cli(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a non-session command of the harness (``claude plugin install ...``); with ``check``
        it must succeed."""
        argv = [str(self.installed.binary), *args]
        what = f"{self.harness.name} {' '.join(args)}"
        return run_command(argv, what, env=self.turn_env(), cwd=self.workspace, timeout=timeout, check=check)

    def recalled(self, text: str, marker: str) -> bool:
        """Whether ``marker`` is inside the first recall envelope of ``text`` (as this harness forwards it)."""
        open_tag, close_tag = self.harness.envelope
        return recalled(text, marker, open_tag=open_tag, close_tag=close_tag)

    def assert_clean(self, fake: Any) -> None:
        """No paxm noise and no half envelope reached the model in any request of ``fake``."""
        open_tag, close_tag = self.harness.envelope
        for text in model_inputs(fake):
            assert_no_hook_noise(text, open_tag=open_tag.split(" ")[0], close_tag=close_tag)

    def flushed_memories(self) -> list[str]:
        """The stored memory texts, once the daemon a hook started has delivered the turn."""
        self.wait_for_daemon()
        self.paxm("__hook-control", "--flush")
        return self.memory_texts()


def stamped_run(
    box: HarnessBox, argv: list[str], env: dict[str, str], timeout: float, *, watch: str
) -> tuple[int, list[tuple[float, str]], str, float]:
    """Run ``argv`` in the workspace, stamping each line of ``watch`` (``stdout`` or ``stderr``)
    as it arrives (how long the harness waited for a hook); returns the exit code, the stamped
    lines, the other stream's text and the wall time.  Killed after ``timeout`` seconds."""
    started = time.monotonic()
    stamped: list[tuple[float, str]] = []
    with tempfile.TemporaryFile() as other:
        pipes: dict[str, Any] = {"stdout": other, "stderr": other, watch: subprocess.PIPE}
        with subprocess.Popen(argv, cwd=box.workspace, env=env, stdin=subprocess.DEVNULL, **pipes) as process:
            watchdog = threading.Timer(timeout, process.kill)
            watchdog.start()
            try:
                for raw in getattr(process, watch):
                    stamped.append((time.monotonic(), raw.decode("utf-8", "replace")))
                returncode = process.wait()
            finally:
                watchdog.cancel()
        other.seek(0)
        rest = other.read().decode("utf-8", "replace")
    return returncode, stamped, rest, time.monotonic() - started


def ok(turn: Turn) -> None:
    """The turn finished and the model's reply came back."""
    assert turn.returncode == 0, (turn.stderr[-4000:], turn.stdout[-2000:])
    assert turn.reply, turn.stdout[-4000:]


@dataclass
class Recall:
    """What :func:`capture_then_recall` saw: both turns and the second session's model inputs."""

    marker: str
    first: Turn
    second: Turn
    #: model inputs of the first and of the second session
    first_inputs: list[str]
    second_inputs: list[str]


def capture_then_recall(
    box: HarnessBox,
    fake: Any,
    *,
    decision: str = "Decision: our release branches are named {marker}-<version> from now on.",
    question: str = "What naming scheme did we decide on for release branches?",
    marker: str = "",
    check: Callable[[Turn], None] = ok,
) -> Recall:
    """The shared flow: a decision in one session is captured and recalled in the next.

    paxm must already be set up in ``box`` and ``fake`` must have been started with the same
    ``marker``.  Asserts: both turns finish; the captured turn holds the prompt's marker and the
    model's reply; the first request of the second session carries the marker inside a recall
    envelope and its reply says the model saw it.  Returns both turns for harness-specific checks.
    """
    marker = marker or getattr(fake, "marker", "") or f"KESTREL-{uuid.uuid4().hex[:10]}"
    first = box.turn(fake, decision.format(marker=marker))
    check(first)
    first_inputs = model_inputs(fake)
    assert first_inputs, "the harness sent no model request"
    stored = [t for t in box.flushed_memories() if marker in t]
    assert stored, box.memory_texts()
    assert any(REPLY in t for t in stored), stored  # the reply was captured with the prompt
    seen = len(first_inputs)
    second = box.turn(fake, question)
    check(second)
    second_inputs = model_inputs(fake)[seen:]
    assert second_inputs, "the harness sent no model request in the second session"
    assert box.recalled(second_inputs[0], marker), second_inputs[0][-3000:]
    assert second.reply.endswith("[marker-seen]"), second.reply
    box.assert_clean(fake)
    return Recall(marker, first, second, first_inputs, second_inputs)


def cross_harness(
    first: HarnessBox, second: HarnessBox, *, marker: str = "", check: Callable[[Turn], None] = ok
) -> tuple[Turn, list[str]]:
    """A decision ``first`` captured is recalled by ``second``; returns ``second``'s turn and
    what its model was shown.

    Both boxes share one root (HOME, workspace, paxm config: ``HarnessBox(first.root, ...)``)
    and paxm must be set up for both agents (``first.setup(second.harness.agent)``).
    """
    marker = marker or f"HERON-{uuid.uuid4().hex[:10]}"
    with first.fake("first", marker=marker) as fake:
        check(first.turn(fake, f"Decision: the metrics dashboard lives at {marker}.example from now on."))
    assert any(marker in t for t in first.flushed_memories()), first.memory_texts()
    with second.fake("second", marker=marker) as fake:
        turn = second.turn(fake, "Where does the metrics dashboard live?")
        check(turn)
        inputs = model_inputs(fake)
        assert inputs and second.recalled(inputs[0], marker), inputs[:1]
        assert turn.reply.endswith("[marker-seen]"), turn.reply
        second.assert_clean(fake)
    return turn, inputs


#: a JSON-RPC memory provider that never answers
HANG_PROVIDER = Path(__file__).with_name("hang_provider.py")


def add_hanging_provider(box: PaxmSandbox) -> None:
    """Add a provider that never answers to both passive recall profiles, with an 8 s budget:
    longer than the hook client's 5 s ceiling, short enough that the daemon's abandoned recall
    thread is done by the time the test stops the daemon."""
    data = box.config_data()
    data["providers"]["stuck"] = {
        "type": "jsonrpc",
        "enabled": True,
        "command": sys.executable,
        "args": [str(HANG_PROVIDER)],
        "timeout": "60s",
    }
    for profile in ("passive", "passive_initial"):
        data["recall_profiles"][profile]["providers"].append({"name": "stuck", "required": False, "timeout": "8s"})
    box.write_config_data(data)


@contextmanager
def daemon_held_off(box: PaxmSandbox) -> Iterator[None]:
    """Hold the hook daemon's lock for the block: every daemon a hook client tries to start
    gives up at once, so every hook finds no daemon and takes the inbox path."""
    import fcntl

    hooks = box.config.parent / "hooks"
    hooks.mkdir(mode=0o700, exist_ok=True)  # private, as the daemon requires of its directory
    with open(hooks / "paxm-hook.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    (hooks / "paxm-hook.lock").unlink()


#: ``backfill run --before``: the sessions just ran (the default leaves the last 2 minutes to hooks)
BACKFILL_BEFORE = "2099-01-01"


def backfilled_then_skipped_live(box: HarnessBox, fake: Any, marker: str) -> tuple[str, list[str]]:
    """The shared backfill flow, after one turn that ran before paxm was installed (a decision
    with ``marker``, in the harness's own session files only).

    ``paxm setup`` captures nothing of it; ``backfill scan`` finds one file with one turn and
    ``backfill run`` stores it, with the model's reply; the decision is recalled.  A second turn,
    paxm live now, is recalled into (the fake saw the marker) and captured by the hooks, and a
    second ``backfill run`` skips it as live: nothing is stored twice, no envelope is stored.
    Returns the backfilled episode and the memories after the live turn.
    """
    agent = box.harness.agent
    box.paxm("setup", "--yes", "--agent", agent, "--provider", "sqlite")
    box.generous_recall_budget()
    assert box.memory_texts() == []  # nothing captured: paxm was not there
    scan = box.paxm_json("backfill", "scan", "--agent", agent)
    assert (scan["files"], scan["turns"]) == (1, 1), scan
    run = box.paxm_json("backfill", "run", "--agent", agent, "--before", BACKFILL_BEFORE)
    assert (run["queued"], run["delivered"]) == (1, 1), run
    stored = [t for t in box.memory_texts() if marker in t]
    assert len(stored) == 1 and REPLY in stored[0], box.memory_texts()
    assert f"{marker}-&lt;version>" in box.recall("release branches naming scheme")
    second = box.turn(fake, "What naming scheme did we decide on for release branches?")
    assert second.returncode == 0, second.stderr[-4000:]
    assert second.reply.endswith("[marker-seen]")  # the fake saw the backfilled memory
    box.wait_for_daemon()
    box.paxm("__hook-control", "--flush")
    live = box.memory_texts()
    again = box.paxm_json("backfill", "run", "--agent", agent, "--before", BACKFILL_BEFORE)
    assert again["queued"] == 0 and again["skipped_live"] == 1, again  # the second turn was captured live
    texts = box.memory_texts()
    assert len(texts) == len(live)
    assert not any("paxm-recall" in t or "paxm-session-identity" in t for t in texts)
    return stored[0], live


@contextmanager
def hanging_provider(box: PaxmSandbox) -> Iterator[None]:
    """With paxm set up in ``box``: for the block, a provider that never answers is in both
    passive recall profiles (:func:`add_hanging_provider`), one memory is stored, and the hook
    daemon runs (stopped after the block)."""
    add_hanging_provider(box)
    box.paxm("remember", "--text", "The deploy window is Tuesday afternoon.")
    daemon = box.start_daemon()
    try:
        yield
    finally:
        box.stop_daemon(daemon)


def drained_on_start(box: PaxmSandbox, marker: str) -> None:
    """After turns that ran with the hook daemon held off (:func:`daemon_held_off`): a daemon
    started now drains the inbox, and ``marker`` is stored."""
    daemon = box.start_daemon()
    try:
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts())
    finally:
        box.stop_daemon(daemon)


#: a paxm config that does not parse
BROKEN_CONFIG = "providers: [this is: not valid\n"


def daemon_refused_config(box: PaxmSandbox) -> None:
    """After a turn with :data:`BROKEN_CONFIG`: the hook daemon a hook started refuses the config
    and exits (waited for up to 10 s), leaving no socket behind."""
    deadline = time.monotonic() + 10
    while box.daemon_pid() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (box.config.parent / "hooks" / "paxm-hook.sock").exists()


def paxm_removed_midway(
    box: HarnessBox, fake: Any, remove: Callable[[], None], prompt: str = "Hello there", *, wait: float = 120
) -> Turn:
    """Start a turn, and once the model got its first request (``fake`` should ``hang`` so the
    turn is still running), call ``remove`` (uninstall paxm, delete its interpreter or config);
    returns the finished turn, which must complete as if paxm had never been there."""
    box.point_at(str(fake.url))
    with subprocess.Popen(
        box.argv(prompt),
        cwd=box.workspace,
        env=box.turn_env(str(fake.url)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    ) as process:
        deadline = time.monotonic() + wait
        while not model_requests(fake) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert model_requests(fake), f"{box.harness.name} sent no model request"
        remove()
        out, err = process.communicate(timeout=wait + 60)
    return Turn(process.returncode, out, err, 0.0, box.harness.reply(box, out))


def quiet_turn(
    box: HarnessBox, fake: Any, prompt: str, *, check: Callable[[Turn], None] = ok, noise: Iterable[str] = ()
) -> Turn:
    """A turn paxm must stay out of (its daemon down, its config broken, its interpreter gone): the
    turn passes ``check``, and no model request holds paxm's envelope or noise (nor ``noise``,
    the harness's own error output).  ``fake`` is a Chat Completions fake: every request it got counts."""
    run = box.turn(fake, prompt)
    check(run)
    for request in fake.completions():
        text = request.user_text()
        assert_no_hook_noise(text, extra=noise)
        assert PASSIVE_OPEN not in text
    return run


def daemon_down_turn(box: HarnessBox, *, check: Callable[[Turn], None] = ok, noise: Iterable[str] = ()) -> Turn:
    """With paxm's daemon held off, a turn that states a decision is a :func:`quiet_turn`, and
    nothing is lost: the daemon started afterwards drains the turn from the inbox."""
    marker = f"OSPREY-{uuid.uuid4().hex[:10]}"
    with daemon_held_off(box), box.fake(marker=marker) as fake:
        run = quiet_turn(box, fake, f"Remember: the staging database is called {marker}.", check=check, noise=noise)
    drained_on_start(box, marker)
    return run


def hanging_provider_turn(box: HarnessBox, *, check: Callable[[Turn], None] = ok, noise: Iterable[str] = ()) -> Turn:
    """With a memory provider that never answers (:func:`hanging_provider`), a turn is a
    :func:`quiet_turn` that costs at most the hook client's ceiling: the recall budget (8.1 s) is
    longer than the client's 5 s, so the client gives up and the plugin's own 10 s limit never acts."""
    with hanging_provider(box), box.fake() as fake:
        run = quiet_turn(box, fake, "When is the deploy window?", check=check, noise=noise)
    assert run.wall < 60
    return run


def broken_config_turn(box: HarnessBox, *, check: Callable[[Turn], None] = ok, noise: Iterable[str] = ()) -> Turn:
    """With :data:`BROKEN_CONFIG` as paxm's config, a turn is a :func:`quiet_turn` that gets the
    model's reply, and the daemon a hook started refuses the config (:func:`daemon_refused_config`)."""
    box.config.write_text(BROKEN_CONFIG)
    with box.fake() as fake:
        run = quiet_turn(box, fake, "Hello there", check=check, noise=noise)
        assert run.reply.startswith("Noted")
    daemon_refused_config(box)
    return run


def _interpreter_removed(box: HarnessBox, generated: Path, tmp: Path) -> None:
    """Install paxm again (``setup --force``), then make ``generated`` run an interpreter that is
    deleted: paxm's installation is gone, the file the harness loads stays."""
    python = tmp / "gone" / "python"
    python.parent.mkdir()
    python.symlink_to(sys.executable)
    box.paxm("setup", "--yes", "--agent", box.harness.agent, "--provider", "sqlite", "--force")
    generated.write_text(generated.read_text().replace(f'"{os.path.abspath(sys.executable)}"', f'"{python}"'))
    assert str(python) in generated.read_text()
    python.unlink()


def generated_file_outlives_paxm(
    box: HarnessBox, tmp: Path, *, hang: float, check: Callable[[Turn], None] = ok, noise: Iterable[str] = ()
) -> None:
    """For a harness that loads paxm's generated file (``native_config``) at start: a turn during
    which ``paxm uninstall`` removes the file completes, and so does a later turn whose file runs
    a deleted interpreter; no model request gets paxm's noise, the later one no envelope either."""
    assert box.harness.native_config is not None, f"{box.harness.name} names no native config"
    generated = box.harness.native_config(box)
    try:
        with box.fake(hang=hang) as fake:  # the model hangs so the turn is still running at uninstall

            def remove() -> None:
                box.uninstall()
                assert not generated.exists()

            check(paxm_removed_midway(box, fake, remove))
            for request in fake.completions():
                assert_no_hook_noise(request.user_text(), extra=noise)
        _interpreter_removed(box, generated, tmp)
        with box.fake("requests2") as fake:
            run = quiet_turn(box, fake, "Hello again", check=check, noise=noise)
            assert run.reply.startswith("Noted")
    finally:
        box.stop_daemon()


def stale_paths(box: HarnessBox, gone: str, tmp: Path) -> None:
    """Make the installed hook commands point at a removed client (``pip uninstall paxm``) or a
    removed interpreter (a rebuilt venv), in the harness's native config."""
    from paxm_core.integration import client_path, interpreter_path

    assert box.harness.native_config is not None, f"{box.harness.name} names no native config"
    native = box.harness.native_config(box)
    installed = native.read_text()
    real = str(client_path()) if gone == "client" else interpreter_path()
    assert real in installed, installed[:2000]
    native.write_text(installed.replace(real, str(tmp / "removed" / ("client.py" if gone == "client" else "python"))))


def fail_open_when_paxm_gone(
    box: HarnessBox, gone: str, *, check: Callable[[Turn], None] = ok
) -> tuple[Turn, list[str]]:
    """Install, make paxm's installed paths stale, run a turn: the prompt reaches the model,
    the turn completes, and nothing of paxm's (no envelope, no noise) reaches the model.

    Returns the turn and what the model was shown, for harness-specific checks.
    """
    box.setup()
    stale_paths(box, gone, box.root)
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    with box.fake("gone", marker=marker) as fake:
        turn = box.turn(fake, f"Hello, the codename is {marker}.")
        check(turn)
        assert "blocked" not in turn.stdout + turn.stderr
        assert turn.reply.endswith("[marker-seen]"), turn.reply  # the prompt reached the model
        inputs = model_inputs(fake)
        assert inputs and marker in inputs[0]
        assert all(box.harness.envelope[0] not in text for text in inputs)
        box.assert_clean(fake)
    return turn, inputs


@contextmanager
def recorded_sessions(harness: Harness, prompts: Sequence[str], *, turn_timeout: float = 240) -> Iterator[HarnessBox]:
    """Run ``prompts`` as turns of the pinned ``harness`` with paxm installed, offline, against its
    fake model (marker ``OSPREY-42``), each turn's writes flushed; yields the box, whose HOME holds
    the harness's own session files for a transcript-fixture script to copy.

    :raises RuntimeError: a turn failed (the end of its stderr in the message).
    """
    installed = install(harness)
    with tempfile.TemporaryDirectory() as tmp:
        box = HarnessBox(Path(tmp) / "box", harness, installed)
        box.setup()
        box.generous_recall_budget()
        try:
            with box.fake(marker="OSPREY-42") as fake:
                for prompt in prompts:
                    run = box.turn(fake, prompt, timeout=turn_timeout)
                    if run.returncode != 0:
                        raise RuntimeError(f"{harness.name} turn failed:\n{run.stderr[-4000:]}")
                    box.flushed_memories()
        finally:
            box.stop_daemon()
        yield box


def copy_fixture_files(paths: Iterable[Path], out: Path) -> None:
    """Replace the directory ``out`` by copies of ``paths`` (names kept), saying what was copied."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for path in paths:
        shutil.copy(path, out / path.name)
        print(f"copied {path.name} ({path.stat().st_size} bytes)")
