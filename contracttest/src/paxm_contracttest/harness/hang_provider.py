"""A JSON-RPC provider plugin that answers everything except ``paxm.search``, which never returns.

Run as a script (``kit.add_hanging_provider`` configures it): a memory provider that hangs, for
the tests that prove a hook gives up on its own deadline.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    """Answer JSON-RPC requests on stdin until it closes; ``paxm.search`` never gets an answer."""
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if request.get("method") == "paxm.search":
            time.sleep(600)  # paxm must give up on its own deadline and kill us
            continue
        result = {"put_batch": False, "delete": False, "attribution": False}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
