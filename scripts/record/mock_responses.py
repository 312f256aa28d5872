"""A scripted OpenAI Responses API server (SSE) on 127.0.0.1, for recording Codex offline
(scripts/record/codex). Each request that offers tools gets the next step of STEPS (a
shell command, then the closing text); other requests (titles, summaries) get a short
text. GET requests (model lists) get an empty list. Usage: mock_responses.py PORT
[REQUEST_LOG]."""
import json, sys, http.server

STEPS = [
    ("shell", "ls"),
    ("shell", "cat README.md"),
    # Outside the read-only sandbox: Codex asks the client first.
    ("escalate", "printf 'Hello, world\\n' > README.md"),
    ("text", "Listed the files, read the README and made it say hello to the world."),
]
state = {"n": 0, "id": 0}
LOG = open(sys.argv[2] if len(sys.argv) > 2 else "/dev/null", "a")


def shell_call(tools, command):
    """The call of whichever shell tool the request offers, with that tool's arguments."""
    names = [t.get("name") for t in tools]
    if "exec_command" in names:
        return "exec_command", {"cmd": command}
    if "shell_command" in names:
        return "shell_command", {"command": command}
    return "shell", {"command": ["bash", "-lc", command]}


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        LOG.write("GET %s\n" % self.path); LOG.flush()
        body = json.dumps({"object": "list", "data": [], "models": []}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        raw = self.rfile.read(n) or b"{}"
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        tools = body.get("tools") or []
        LOG.write("POST %s tools=%s %s\n" % (self.path, [t.get("name") or t.get("type") for t in tools], json.dumps(body)[-400:])); LOG.flush()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        state["id"] += 1
        rid = "resp_%d" % state["id"]

        def ev(kind, data):
            data = dict(data, type=kind)
            self.wfile.write(("event: %s\ndata: %s\n\n" % (kind, json.dumps(data))).encode())
            self.wfile.flush()

        ev("response.created", {"response": {"id": rid, "object": "response", "status": "in_progress", "output": []}})
        if tools:
            i = min(state["n"], len(STEPS) - 1); state["n"] += 1
            kind, arg = STEPS[i]
        else:
            i, kind, arg = 99, "text", "Mock session"
        if kind in ("shell", "escalate"):
            name, args = shell_call(tools, arg)
            if kind == "escalate" and name == "exec_command":
                args.update(sandbox_permissions="require_escalated", justification="Write the README")
            item = {"type": "function_call", "id": "fc_%d" % i, "call_id": "call_%d" % i, "name": name,
                    "arguments": json.dumps(args), "status": "completed"}
            ev("response.output_item.added", {"output_index": 0, "item": dict(item, arguments="", status="in_progress")})
            ev("response.function_call_arguments.delta", {"output_index": 0, "item_id": item["id"], "delta": item["arguments"]})
            ev("response.output_item.done", {"output_index": 0, "item": item})
        else:
            mid = "msg_%d_%d" % (i, state["id"])
            ev("response.output_item.added", {"output_index": 0, "item": {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}})
            ev("response.content_part.added", {"output_index": 0, "item_id": mid, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
            ev("response.output_text.delta", {"output_index": 0, "item_id": mid, "content_index": 0, "delta": arg})
            item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": arg, "annotations": []}]}
            ev("response.output_item.done", {"output_index": 0, "item": item})
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
        ev("response.completed", {"response": {"id": rid, "object": "response", "status": "completed", "output": [item], "usage": usage}})
        self.close_connection = True


srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
srv.serve_forever()
