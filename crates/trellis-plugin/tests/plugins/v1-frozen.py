"""A plugin written against trellis-plugin v1 without any SDK, frozen: never edit this
file. It must keep working with every later Trellis (the protocol's compatibility rule),
whatever versions the host offers beside 1."""
import json
import sys


def send(msg):
    msg["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


calls = 0
next_id = 100
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        if 1 not in params["versions"]:
            send({"id": msg["id"], "error": {"code": -32602, "message": "v1 only"}})
            break
        send({"id": msg["id"], "result": {"version": 1, "registration": {
            "subscriptions": ["tool_call_created"],
            "sections": [{"id": "count", "title": "Frozen count", "max_rows": 3, "collapsed": False}],
            "status_items": [{"id": "n", "label": "Frozen"}]}}})
    elif method == "event" and params.get("type") == "tool_call_created":
        calls += 1
    elif method == "idle":
        next_id += 1
        send({"id": next_id, "method": "ui/set_section", "params": {"id": "count", "body": {"rows": [{"line": [{"text": "%d calls" % calls, "tone": "accent", "bold": False}], "id": None}], "count": calls}}})
        send({"method": "ui/set_status_item", "params": {"id": "n", "line": "v1 %d" % calls}})
    elif method == "permission/offer":
        send({"id": msg["id"], "result": {"claim": False}})
    elif method == "shutdown":
        break
    elif "id" in msg and "method" in msg:
        send({"id": msg["id"], "error": {"code": -32601, "message": "unknown"}})
