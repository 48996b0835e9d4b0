"""A local OpenAI Chat Completions server for benchmarks: streams SSE replies in the real wire
format. Per user message it asks for two tool calls (read_file, then list_dir) and then
answers with text, so each agent turn is three model calls."""

import itertools
import json
import os
import sys
import threading

# Tests set this to see which API key the client sent.
AUTH_LOG = os.environ.get("MOCK_AUTH_LOG")
# Set, the one key taken (others get the real API's 401), and the models served (others get
# its 404), as a real account behaves.
API_KEY = os.environ.get("MOCK_API_KEY")
MODELS = [m for m in os.environ.get("MOCK_MODELS", "").split(",") if m]

_replies = itertools.count(1)
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chunk(delta, finish=None):
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def reply_for(messages):
    tools_since_user = 0
    for m in reversed(messages):
        if m.get("role") == "user":
            break
        if m.get("role") == "tool":
            tools_since_user += 1
    if tools_since_user == 0:
        call = ("read_file", {"path": "README.md"})
    elif tools_since_user == 1:
        call = ("list_dir", {"path": "."})
    else:
        call = None
    events = []
    if call:
        events.append(chunk({"role": "assistant", "content": "Checking the project. "}))
        events.append(chunk({"tool_calls": [{"index": 0, "id": f"call_{tools_since_user}", "type": "function",
                                              "function": {"name": call[0], "arguments": ""}}]}))
        events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(call[1])}}]}))
        events.append(chunk({}, "tool_calls"))
    else:
        # A different final reply each time, as a model making progress would give.
        for piece in ["All checks ", "look fine; ", f"nothing to change (check {next(_replies)})."]:
            events.append(chunk({"content": piece}))
        events.append(chunk({}, "stop"))
    events.append({"choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 40}})
    return events


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY on every connection: no delayed-ACK stall can hide our own latency.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_POST(self):
        if AUTH_LOG:
            with open(AUTH_LOG, "a") as f:
                f.write(self.headers.get("authorization", "<none>") + "\n")
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if API_KEY and self.headers.get("authorization") != f"Bearer {API_KEY}":
            return self.refuse(401, {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                     "code": "invalid_api_key"})
        if MODELS and body.get("model") not in MODELS:
            return self.refuse(404, {"message": f"The model `{body.get('model')}` does not exist or you do not have access to it.",
                                     "type": "invalid_request_error", "code": "model_not_found"})
        out = b""
        for ev in reply_for(body.get("messages", [])):
            out += b"data: " + json.dumps(ev).encode() + b"\n\n"
        out += b"data: [DONE]\n\n"
        # Head and body in one write: separate small writes meet Nagle's algorithm and
        # delayed ACKs, adding tens of milliseconds of latency that is the server's, not ours.
        head = ("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                f"content-length: {len(out)}\r\n\r\n").encode()
        self.wfile.write(head + out)
        self.wfile.flush()

    def do_GET(self):
        # The model listing, as the real API answers it (`GET /v1/models`), behind the same key.
        if self.path.rstrip("/") != "/v1/models":
            return self.refuse(404, {"message": f"Unknown path {self.path}", "type": "invalid_request_error"})
        if AUTH_LOG:
            with open(AUTH_LOG, "a") as f:
                f.write(self.headers.get("authorization", "<none>") + "\n")
        if API_KEY and self.headers.get("authorization") != f"Bearer {API_KEY}":
            return self.refuse(401, {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                     "code": "invalid_api_key"})
        listed = {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "mock"} for m in MODELS]}
        out = json.dumps(listed).encode()
        head = ("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                f"content-length: {len(out)}\r\n\r\n").encode()
        self.wfile.write(head + out)
        self.wfile.flush()

    def refuse(self, status, error):
        out = json.dumps({"error": error}).encode()
        head = (f"HTTP/1.1 {status} Refused\r\ncontent-type: application/json\r\n"
                f"content-length: {len(out)}\r\n\r\n").encode()
        self.wfile.write(head + out)
        self.wfile.flush()


def start():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    # Standalone: serve until killed; the first line of output is the port.
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(srv.server_address[1], flush=True)
    sys.stdout.close()
    srv.serve_forever()
