"""Backfill throughput: synthetic Claude Code transcripts -> ``paxm backfill run`` -> SQLite provider.

    uv run --all-packages python benchmarks/backfill_bench.py            # 100,000 turns
    uv run --all-packages python benchmarks/backfill_bench.py --quick    # 5,000 turns

Runs the real CLI in a private HOME (``paxm setup --agent claude --provider sqlite``), times a
full run (process start included, ``--priority normal``: the default nice 10 would measure
the machine's other load; the default ``--workers``: one reading/rendering process per
core), then a second run over the same range (must store nothing) and, as the baseline, the
same pipeline with batches of one (``--batch 1``: one transaction per append, claim, put and
completion, like live delivery) over a sample.  Prints turns/s and the batched/unbatched
ratio.

``--render N`` times only the rendering of N synthetic turns in this process (CPU time per turn
of ``TurnRenderer.render``): the part of a worker's work that does not depend on the disk or
the load.

``--compare SRC --repeat N`` instead times N full runs of this code interleaved with N of the
``paxm_core`` in SRC (e.g. ``git worktree add /tmp/base main``; put first on ``PYTHONPATH``),
A B A B ..., each on a fresh copy of the same transcripts, and prints wall time and CPU per
process: the run's own (``RUSAGE_SELF``), its children's (workers, delivery process), and the
delivery process's own where it reports one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAXM = str(Path(sys.executable).parent / "paxm")

_spec = importlib.util.spec_from_file_location("_backfill_synthetic", ROOT / "tests" / "backfill" / "_synthetic.py")
assert _spec is not None and _spec.loader is not None
synthetic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(synthetic)


def _env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(home),
    }


def _paxm(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([PAXM, *args], env=_env(home), capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"paxm {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


#: runs the CLI in-process and reports the run's own CPU and its children's on stderr's last line
_WRAP = (
    "import atexit, json, resource, sys\n"
    "def _cpu(who):\n"
    "    u = resource.getrusage(who)\n"
    "    return u.ru_utime + u.ru_stime\n"
    "atexit.register(lambda: sys.stderr.write('\\nPAXM-BENCH-CPU ' + json.dumps("
    "[_cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)]) + '\\n'))\n"
    "sys.argv[0] = 'paxm'\n"
    "from paxm_core.cli import main\n"
    "main()\n"
)


def _measured_run(home: Path, src: str | None, *extra: str) -> dict[str, object]:
    """One full run through ``_WRAP`` (``src``: a baseline ``paxm_core`` first on the path)."""
    env = _env(home)
    if src:
        env["PYTHONPATH"] = src
    args = ["backfill", "run", "--agent", "claude", "--json", "--before", "2099-01-01", "--priority", "normal"]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _WRAP, *args, *extra], env=env, capture_output=True, text=True, timeout=3600, cwd=home
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"backfill run failed:\n{done.stdout}\n{done.stderr}")
    line = [x for x in done.stderr.splitlines() if x.startswith("PAXM-BENCH-CPU ")][-1]
    own, children = json.loads(line.split(" ", 1)[1])
    report = json.loads(done.stdout)
    return {"wall": wall, "own": own, "children": children, "report": report, "load": os.getloadavg()[0]}


def _compare(args: argparse.Namespace) -> int:
    import shutil

    sessions = max(1, args.turns // args.per_session)
    total = sessions * args.per_session
    rows: list[tuple[str, dict[str, object]]] = []
    with tempfile.TemporaryDirectory(prefix="paxm-backfill-bench-") as tmp:
        root = Path(tmp)
        pristine = root / "pristine"
        synthetic.write_sessions(pristine / ".claude" / "projects", sessions, args.per_session)
        for index in range(args.repeat):
            for label, src in (("base", args.compare), ("this", None)):
                home = root / f"{label}-{index}"
                home.mkdir()
                _paxm(home, "setup", "--yes", "--agent", "claude", "--provider", "sqlite")
                # the same transcripts (the config names its own home's paths: set up afresh)
                shutil.copytree(pristine / ".claude" / "projects", home / ".claude" / "projects", dirs_exist_ok=True)
                result = _measured_run(home, src, *args.extra)
                report = result["report"]
                assert isinstance(report, dict) and report["delivered"] == total and _stored(home) == total, report
                shutil.rmtree(home)
                rows.append((label, result))
                per = 1000 / total
                print(
                    f"{label}  wall {result['wall']:7.2f} s  {total / float(result['wall']):6.0f} turns/s"  # type: ignore[arg-type]
                    f"  run process {float(result['own']) * per:.3f}"  # type: ignore[arg-type]
                    f"  children {float(result['children']) * per:.3f}"  # type: ignore[arg-type]
                    f"  (delivery process {float(report.get('delivery_cpu', 0.0)) * per:.3f})"
                    f"  CPU-s per 1,000 turns  [{report.get('delivery', 'thread') or 'thread'} delivery,"
                    f" {report['workers']} workers]  load {result['load']:.2f}",
                    flush=True,
                )
    for label in ("base", "this"):
        mine = [r for name, r in rows if name == label]
        wall = statistics.median(float(r["wall"]) for r in mine)  # type: ignore[arg-type]
        own = statistics.median(float(r["own"]) for r in mine) * 1000 / total  # type: ignore[arg-type]
        print(f"median {label}: wall {wall:.2f} s, run process {own:.3f} CPU-s per 1,000 turns")
    return 0


def _render_only(args: argparse.Namespace) -> int:
    """CPU time per turn of ``TurnRenderer.render``, in process."""
    sessions = max(1, args.render // args.per_session)
    with tempfile.TemporaryDirectory(prefix="paxm-backfill-render-") as tmp:
        home = _home(Path(tmp), "render", sessions, args.per_session)
        for key, value in _env(home).items():
            if key != "PATH":
                os.environ[key] = value
        from paxm_core.backfill.render import TurnRenderer
        from paxm_core.backfill.sources import transcript_reader
        from paxm_core.backfill.workers import _LightRuntime
        from paxm_core.config import load_config
        from paxm_core.plugins import get_plugin_manager
        from paxm_core.tools import Tools

        config = load_config(home / ".config" / "paxm" / "config.yaml")
        manager = get_plugin_manager()
        _, reader = transcript_reader(manager, "claude")
        tools = Tools(config, None, session_id="", agent_name="")  # type: ignore[arg-type]
        renderer = TurnRenderer(_LightRuntime(config, manager, tools), None)
        turns = [t for path in reader.transcript_files() for t in reader.read_turns(path)]
        values: list[float] = []
        for _ in range(args.repeat):
            started = time.process_time()
            for turn in turns:
                renderer.render(turn)
            values.append((time.process_time() - started) / len(turns) * 1e6)
    shown = ", ".join(f"{v:.1f}" for v in values)
    print(f"render  median {statistics.median(values):6.1f} us of CPU per turn  ({shown}; {len(turns)} turns)")
    return 0


def _home(root: Path, name: str, sessions: int, turns: int) -> Path:
    home = root / name
    home.mkdir()
    _paxm(home, "setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    synthetic.write_sessions(home / ".claude" / "projects", sessions, turns)
    return home


#: CPU seconds (user + system) of the last ``_timed_run``'s process: load-independent
LAST_CPU = [0.0]


def _timed_run(home: Path, *extra: str) -> tuple[float, dict[str, object]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = _paxm(
        home, "backfill", "run", "--agent", "claude", "--json", "--before", "2099-01-01", "--priority", "normal", *extra
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    LAST_CPU[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, json.loads(done.stdout)


class HookProbe:
    """A live hook's acknowledgement (the hook client's fsynced inbox append, ``append_raw``,
    on its own queue file) timed every 20 ms on a thread: during a backfill, and idle."""

    def __init__(self, root: Path) -> None:
        from paxm_core.capture._inbox import append_raw

        self._append = append_raw
        self._path = root / "live-hooks.sqlite"
        self._n = 0
        self._stop = threading.Event()
        self.samples: list[float] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self._n += 1
            started = time.perf_counter()
            self._append(self._path, f"probe-{self._n}", "claude", "user_input", b'{"prompt": "probe"}')
            self.samples.append(time.perf_counter() - started)

    def __enter__(self) -> HookProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @classmethod
    def idle(cls, root: Path, count: int) -> list[float]:
        probe = cls(root)
        with probe:
            while len(probe.samples) < count:
                time.sleep(0.02)
        return probe.samples


def _stored(home: Path) -> int:
    conn = sqlite3.connect(home / ".local" / "share" / "paxm" / "memory.sqlite")
    try:
        return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000, help="turns to backfill")
    parser.add_argument("--per-session", type=int, default=100, help="turns per session file")
    parser.add_argument("--baseline-turns", type=int, default=2_000, help="turns for the --batch 1 baseline")
    parser.add_argument("--quick", action="store_true", help="5,000 turns, 500 baseline turns")
    parser.add_argument("--compare", metavar="SRC", help="a baseline checkout's root: interleave runs with it")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each side with --compare")
    parser.add_argument("--render", type=int, default=0, metavar="N", help="time only rendering N turns, in process")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more `backfill run` arguments")
    args = parser.parse_args(argv)
    if args.render:
        return _render_only(args)
    if args.compare:
        return _compare(args)
    if args.quick:
        args.turns, args.baseline_turns = 5_000, 500
    sessions = max(1, args.turns // args.per_session)
    total = sessions * args.per_session
    with tempfile.TemporaryDirectory(prefix="paxm-backfill-bench-") as tmp:
        root = Path(tmp)
        home = _home(root, "full", sessions, args.per_session)
        size = sum(p.stat().st_size for p in (home / ".claude" / "projects").rglob("*.jsonl"))
        with HookProbe(root) as probe:
            seconds, report = _timed_run(home)
        cpu = LAST_CPU[0]
        during = probe.samples
        idle = HookProbe.idle(root, min(len(during), 200))
        assert report["delivered"] == total and _stored(home) == total, report
        again, second = _timed_run(home)
        assert second["queued"] == 0 and _stored(home) == total, second
        base_sessions = max(1, args.baseline_turns // args.per_session)
        base_home = _home(root, "baseline", base_sessions, args.per_session)
        base_seconds, base = _timed_run(base_home, "--batch", "1")
        base_cpu = LAST_CPU[0]
        base_total = base_sessions * args.per_session
        assert base["delivered"] == base_total, base
    rate = total / seconds
    base_rate = base_total / base_seconds
    print(f"backfill {total} turns ({sessions} sessions, {size / 1e6:.1f} MB of transcripts) into SQLite:")
    print(
        f"  full run        {seconds:8.2f} s   {rate:9.0f} turns/s   (process start included;"
        f" {report['workers'] or 'no'} worker processes)"
    )
    print(f"  CPU             {cpu:8.2f} s   {cpu / total * 1000:9.2f} CPU-s per 1,000 turns (user+sys, all threads)")
    if report.get("delivery") == "process":
        share = float(report.get("delivery_cpu", 0.0))  # type: ignore[arg-type]
        print(f"    of which the delivery process {share:8.2f} s   {share / total * 1000:9.2f} CPU-s per 1,000 turns")
    print(f"  second run      {again:8.2f} s   stored nothing new")
    print(f"  --batch 1       {base_seconds:8.2f} s   {base_rate:9.0f} turns/s   ({base_total} turns; baseline)")
    print(f"  --batch 1 CPU   {base_cpu:8.2f} s   {base_cpu / base_total * 1000:9.2f} CPU-s per 1,000 turns")
    print(f"  ratio batched/unbatched: {rate / base_rate:.1f}x   load {os.getloadavg()[0]:.2f}")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from results import record

    record(
        f"backfill into SQLite ({total} turns)",
        round(rate),
        "turns/s",
        f"--batch 1: {base_rate:.0f} turns/s; {cpu / total * 1000:.2f} CPU-s per 1,000 turns",
        "100k turns in <= 60 s",
        seconds * 100_000 / total <= 60 if total >= 100_000 else None,
    )
    if during and idle:
        print(
            f"  live hook ack (append_raw) during the run: median {statistics.median(during) * 1e3:.2f} ms"
            f" (n={len(during)})  | idle: median {statistics.median(idle) * 1e3:.2f} ms (n={len(idle)})"
            f"  ratio {statistics.median(during) / statistics.median(idle):.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
