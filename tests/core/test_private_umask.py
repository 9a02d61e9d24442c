"""private_umask: blocks that overlap across threads leave the process's umask as they found it."""

from __future__ import annotations

import os
import threading

from paxm_core.private_files import private_umask


def test_overlapping_blocks_in_two_threads_restore_the_umask() -> None:
    old = os.umask(0o022)
    try:
        a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
        seen: list[int] = []

        def first() -> None:
            with private_umask():
                a_in.set()
                b_in.wait(10)
            a_out.set()  # leaves while the second block is still open

        def second() -> None:
            a_in.wait(10)
            with private_umask():
                b_in.set()
                a_out.wait(10)
                seen.append(os.umask(0o077))  # still private after the first block left
                os.umask(0o077)

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert seen == [0o077]
        assert os.umask(0o022) == 0o022  # the last block to leave restored the caller's umask
    finally:
        os.umask(old)


def test_nested_blocks_restore_on_the_outermost_exit() -> None:
    old = os.umask(0o027)
    try:
        with private_umask():
            with private_umask():
                pass
            assert os.umask(0o077) == 0o077
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(old)
