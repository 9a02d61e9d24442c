"""The progress bar: drawn only on a terminal, with counts and an ETA; erased when done."""

from __future__ import annotations

import io

import pytest

from paxm_core.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_counts_percent_and_eta_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    out, clock = _Terminal(), _Clock()
    with Progress("eval", 40, stream=out, clock=clock) as bar:
        assert bar.render() == "eval [........................] 0/40   0%  ETA --:--"
        clock.now += 10
        bar.update(10)  # 10 in 10 s: 30 left -> 30 s
        assert out.getvalue().endswith("\reval [######..................] 10/40  25%  ETA 0:30")
        clock.now += 0.01
        bar.update(11)  # within 0.1 s of the last draw: not redrawn
        assert "11/40" not in out.getvalue()
        clock.now += 1
        bar.update(40)
        assert out.getvalue().rstrip(" ").endswith("40/40 100%  done")
    # leaving the block erases the bar
    assert out.getvalue().endswith("\r" + " " * len("eval [########################] 40/40 100%  done") + "\r")


def test_unknown_total_shows_a_count_and_elapsed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    clock = _Clock()
    bar = Progress("flush", stream=_Terminal(), clock=clock)
    clock.now += 75
    bar.update(3)
    assert bar.render() == "flush 3 done  1:15"
    bar.update(3, total=6)
    assert bar.render().startswith("flush [############............] 3/6  50%")


@pytest.mark.parametrize("case", ["pipe", "json", "dumb"])
def test_nothing_is_written_off_a_terminal_or_with_json(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb" if case == "dumb" else "xterm")
    out = io.StringIO() if case == "pipe" else _Terminal()
    with Progress("eval", 5, stream=out, show=case != "json") as bar:
        for i in range(6):
            bar.update(i)
    assert not bar.enabled
    assert out.getvalue() == ""
