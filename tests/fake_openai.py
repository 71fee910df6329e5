"""A small deterministic OpenAI-compatible chat endpoint on loopback, for running reference harnesses
(their own unmodified OpenAI clients) in tests: `with FakeChat(answer) as base_url: ...`.

`answer(request)` gets the decoded JSON body of POST <base_url>/chat/completions and returns the
reply: a string (the assistant message's content), or an `Error(status, message)` answered as an
OpenAI error body (use a 4xx status: clients retry 5xx, with backoff). Requests are kept in `requests`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Error:
    status: int
    message: str


class FakeChat:
    def __init__(self, answer: Callable[[dict], str | Error]):
        self.answer = answer
        self.requests: list[dict] = []
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                fake.requests.append(body)
                reply = fake.answer(body)
                if isinstance(reply, Error):
                    return self._send(
                        reply.status, {"error": {"message": reply.message, "type": "invalid_request_error"}}
                    )
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(fake.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "fake"),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )

            def _send(self, status: int, document: dict) -> None:
                data = json.dumps(document, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __exit__(self, *exc) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def loopback_env(environ: dict[str, str]) -> dict[str, str]:
    """A subprocess environment that reaches loopback directly (no proxy) and has no real API settings."""
    env = {
        k: v
        for k, v in environ.items()
        if k.lower() not in ("http_proxy", "https_proxy", "all_proxy") and not k.startswith("OPENAI_")
    }
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env
