"""A plugin that breaks the protocol one way per mode (argv[1]); no SDK, on purpose."""
import json
import sys
import time

mode = sys.argv[1]


def send(msg):
    msg["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def init(version=1, sections=()):
    line = sys.stdin.readline()
    msg = json.loads(line)
    reg = {"subscriptions": None, "sections": [{"id": s, "title": s.title()} for s in sections]}
    send({"id": msg["id"], "result": {"version": version, "registration": reg}})
    return msg


if mode == "crash-start":
    sys.stderr.write("boom: cannot import a module\n")
    sys.exit(3)
if mode == "version":
    init(version=2)
    time.sleep(30)
if mode == "hang":
    init()
    time.sleep(3600)
if mode == "no-read":
    init()
    time.sleep(3600)
if mode == "garbage":
    init()
    sys.stdin.readline()
    print("Traceback (most recent call last): oops \x1b]52;c;aGk=\x07")
    sys.stdout.flush()
    time.sleep(30)
if mode == "stderr-flood":
    init(sections=["flood"])
    chunk = ("x" * 1000 + "\n") * 1000
    for _ in range(10):
        sys.stderr.write(chunk)
    sys.stderr.flush()
    n = 0
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "event":
            n += 1
            send({"id": 900 + n, "method": "ui/set_section", "params": {"id": "flood", "body": {"rows": [f"{n} events"]}}})
if mode == "crash-mid":
    init()
    n = 0
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "event":
            n += 1
            if n == 3:
                sys.stderr.write("crashing on the third event\n")
                sys.exit(1)
if mode == "ungranted":
    init(sections=["s"])
    send({"id": 1, "method": "host/calls", "params": {}})
    reply = json.loads(sys.stdin.readline())
    while "method" in reply:
        reply = json.loads(sys.stdin.readline())
    send({"method": "store/put", "params": {"key": "k", "value": 1}})
    send({"id": 2, "method": "ui/set_section", "params": {"id": "s", "body": {"rows": [json.dumps(reply.get("error"))]}}})
    for line in sys.stdin:
        pass
if mode == "bad-option":
    init()
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "permission/offer":
            send({"id": msg["id"], "result": {"claim": True}})
            send({"id": 5, "method": "permission/respond", "params": {"request_id": msg["params"]["request_id"], "option_id": "yolo"}})
