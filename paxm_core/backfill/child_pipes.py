"""The pipe protocol a backfill child process (reader worker, delivery process) speaks.

The parent writes pickled requests to the child's stdin and reads pickled answers from its
stdout. Only the standard library: the child imports this before anything heavy.
"""

from __future__ import annotations

import os
from typing import BinaryIO

__all__ = ["protocol_pipes"]


def protocol_pipes() -> tuple[BinaryIO, BinaryIO]:
    """Return the child's (requests, answers) streams, taken from fds 0 and 1.

    File descriptor 1 is then pointed at stderr, so a stray ``print`` in any imported code goes
    to the log and can never corrupt the pickled answers.
    """
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return requests, answers
