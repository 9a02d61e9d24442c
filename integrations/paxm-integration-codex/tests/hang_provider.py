"""A JSON-RPC provider plugin that answers everything except ``paxm.search``, which never returns."""

from __future__ import annotations

import json
import sys
import time

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
