#!/usr/bin/env python3
"""A test plugin whose behaviour is chosen by $SCRIPTED_MODE (stdlib only; one request per process).

It stores memories in $SCRIPTED_STORE (JSON) and appends every request it sees to
$SCRIPTED_LOG (one JSON line each), so tests can check what paxm sent.
"""

import json
import os
import subprocess
import sys
import time

MODE = os.environ.get("SCRIPTED_MODE", "ok")
STORE = os.environ.get("SCRIPTED_STORE", "")
LOG = os.environ.get("SCRIPTED_LOG", "")


def load():
    try:
        with open(STORE) as fh:
            return json.load(fh)
    except (FileNotFoundError, ValueError):
        return {}


def save(items):
    tmp = STORE + f".{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(items, fh)
    os.replace(tmp, STORE)


def reply(req_id, result=None, error=None):
    frame = {"jsonrpc": "2.0", "id": req_id}
    if error is not None:
        frame["error"] = error
    else:
        frame["result"] = result
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def main():
    line = sys.stdin.readline()
    request = json.loads(line)
    if LOG:
        with open(LOG, "a") as fh:
            fh.write(
                json.dumps({"request": request, "argv": sys.argv[1:], "env": os.environ.get("SCRIPTED_EXTRA", "")})
                + "\n"
            )
    method, params, req_id = request["method"], request.get("params"), request["id"]
    if MODE == "hang":
        if os.environ.get("SCRIPTED_CHILD_PIDFILE"):
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            with open(os.environ["SCRIPTED_CHILD_PIDFILE"], "w") as fh:
                fh.write(f"{os.getpid()} {child.pid}")
        time.sleep(60)
    if MODE == "stderr_exit":
        sys.stderr.write("x" * 6000 + "\nfatal: the store is corrupt\n")
        sys.exit(3)
    if MODE == "leak_secret":
        # a careless plugin that prints its credentials when it fails
        key, token = os.environ.get("PLUGIN_API_KEY", ""), os.environ.get("SCRIPTED_TOKEN", "")
        sys.stderr.write(f"auth failed with key={key} token={token}\n")
        sys.exit(1)
    if MODE == "garbage":
        sys.stdout.write("this is not json\n")
        return
    if MODE == "wrong_id":
        reply("not-" + req_id, {})
        return
    if MODE == "linger":
        reply(req_id, {"ok": True})
        time.sleep(60)
    if MODE == "truncated":
        sys.stdout.write('{"jsonrpc":"2.0","id":"' + req_id + '","result":{"hits":[')
        return
    if MODE == "invalid_params" and method != "paxm.health":
        reply(req_id, error={"code": -32602, "message": "text is required", "data": {"field": "text"}})
        return
    items = load()
    if method == "paxm.health":
        reply(req_id, None if MODE == "null_health" else {"ok": True})
    elif method == "paxm.capabilities":
        if MODE in ("legacy", "no_batch"):
            reply(req_id, error={"code": -32601, "message": "method not found"})
        else:
            reply(req_id, {"put_batch": True, "delete": True, "attribution": MODE != "no_attribution"})
    elif method == "paxm.put":
        ref_id = params.get("id") or f"s{len(items) + 1}"
        items[ref_id] = params
        save(items)
        reply(req_id, {"ref": {"id": ref_id, "provider": "ignored"}})
    elif method == "paxm.putBatch":
        if MODE in ("legacy", "no_batch"):
            reply(req_id, error={"code": -32601, "message": "method not found"})
            return
        refs = []
        for item in params["items"]:
            ref_id = item.get("id") or f"s{len(items) + 1}"
            items[ref_id] = item
            refs.append({"id": ref_id})
        save(items)
        if MODE == "short_batch":
            refs = refs[:1]
        reply(req_id, {"refs": refs})
    elif method == "paxm.search":
        text = params.get("text", "").lower()
        hits = []
        for ref_id, item in items.items():
            if text and text in item["text"].lower():
                hit = {
                    "id": ref_id,
                    "text": item["text"],
                    "relevance": 0.9,
                    "score": 0.9,
                    "metadata": item.get("metadata", {}),
                }
                if MODE.startswith("scores="):
                    relevance, score = (float(v) for v in MODE.split("=", 1)[1].split(","))
                    hit.update(relevance=relevance, score=score)
                if MODE == "go_style":
                    # what upstream's Go example emits: zero time for unset created_at, ints
                    hit.update(relevance=1, score=1, created_at="0001-01-01T00:00:00Z", tier="")
                if MODE not in ("no_attribution", "lying_attribution"):
                    hit["origin"] = item.get("origin", {})
                    hit["scope"] = item.get("scope", {})
                hits.append(hit)
        reply(req_id, {"hits": hits})
    elif method == "paxm.delete":
        items.pop(params["id"], None)
        save(items)
        reply(req_id, {"deleted": True})
    else:
        reply(req_id, error={"code": -32601, "message": "method not found"})


main()
