"""A scripted OpenAI-compatible chat completions server (SSE) on 127.0.0.1, for
recording real agents offline (scripts/record/opencode). Each request that offers tools
gets the next step of STEPS (a tool call, then the closing text); requests without
tools (title generation) get a short text. Usage: mock_openai.py PORT [REQUEST_LOG]."""
import json, sys, http.server
STEPS = [
    ("tool", "bash", {"command": "ls", "description": "List files"}),
    ("tool", "read", {"filePath": "README.md"}),
    ("tool", "edit", {"filePath": "README.md", "oldString": "Hello", "newString": "Hello, world"}),
    ("text", "Listed the files, read the README and edited it.", None),
]
state = {"n": 0}
LOG = open(sys.argv[2] if len(sys.argv) > 2 else "/dev/null", "a")
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        LOG.write("GET %s\n" % self.path); LOG.flush()
        self.send_response(404); self.end_headers()
    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(n) or b"{}")
        LOG.write("POST %s %s\n" % (self.path, json.dumps(body)[:300])); LOG.flush()
        # Title generation and other side requests (no tools): a short text.
        tools = body.get("tools") or []
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        def chunk(delta, finish=None):
            d = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "mock-1",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(("data: " + json.dumps(d) + "\n\n").encode()); self.wfile.flush()
        if not tools:
            chunk({"role": "assistant", "content": "Mock session"})
            chunk({}, "stop")
        else:
            i = min(state["n"], len(STEPS) - 1); state["n"] += 1
            kind, name, args = STEPS[i]
            if kind == "tool":
                chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_%d" % i, "type": "function",
                       "function": {"name": name, "arguments": ""}}]})
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(args)}}]})
                chunk({}, "tool_calls")
            else:
                chunk({"role": "assistant", "content": name})
                chunk({}, "stop")
        u = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "mock-1", "choices": [],
             "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}
        self.wfile.write(("data: " + json.dumps(u) + "\n\n").encode())
        self.wfile.write(b"data: [DONE]\n\n"); self.wfile.flush()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
srv.serve_forever()
