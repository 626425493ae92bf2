"""A local OpenAI-compatible HTTP server for judge tests: the real ``openai`` client talks to it.

It serves ``POST …/chat/completions`` (any prefix, so ``/v1/…``, GitHub Models' ``/inference/…``
and Azure's ``/openai/deployments/<name>/…?api-version=…`` all work), checks the key the way
OpenAI (``Authorization: Bearer``) and Azure (``api-key``) expect, and answers with documented
payload shapes: chat completion objects with ``usage``, and ``{"error": {...}}`` bodies with
``retry-after``/``retry-after-ms`` headers on 429.

Tests script the answers in order (:meth:`FakeOpenAI.script`); with nothing scripted it replies
with a valid judgement that cites the first evidence ID of the prompt. ``usage`` is an estimate,
one token per four characters of message content (what the benchmark calls "fake-server usage").
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CATEGORIES = ("agentPerformance", "taskOutcomeQuality", "processCompliance")


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


@dataclass
class Reply:
    """A 200 chat completion. ``content`` may be a function of the request body."""

    content: str | Callable[[dict[str, Any]], str] | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    no_choices: bool = False
    model: str | None = None


@dataclass
class Fail:
    """An HTTP error with OpenAI's error body."""

    status: int
    message: str
    type: str = "server_error"
    code: str | None = None
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Stall:
    """Hold the request for ``seconds`` (longer than the client's timeout), then answer."""

    seconds: float
    then: Reply | Fail | None = None


Action = Reply | Fail | Stall


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]


def judgement(
    scores: dict[str, object] | object = 80,
    evidence: dict[str, list[str]] | list[str] | None = None,
    rationale: str = "The evidence supports this score.",
) -> str:
    """JSON for a judgement of all three categories."""
    cats = []
    for name in CATEGORIES:
        score = scores[name] if isinstance(scores, dict) else scores  # any JSON, to test bad ones
        ids = evidence if isinstance(evidence, list) or evidence is None else evidence[name]
        cats.append({"category": name, "aiScore": score, "rationale": rationale,
                     "evidence": list(ids or [])})
    return json.dumps({"categories": cats})


def evidence_ids_in(body: dict[str, Any]) -> list[str]:
    """The item IDs in the request's fenced evidence, in prompt order."""
    user = body["messages"][-1]["content"]
    ids = []
    for line in user.splitlines():
        if line.startswith("{"):
            obj = json.loads(line)
            if isinstance(obj.get("id"), str):
                ids.append(obj["id"])
    return ids


def cite_first(score: int = 80) -> Callable[[dict[str, Any]], str]:
    """A well-behaved model: scores every category and cites the first evidence ID it saw."""

    def content(body: dict[str, Any]) -> str:
        return judgement(score, evidence_ids_in(body)[:1])

    return content


class FakeOpenAI:
    """The server. Use as a context manager; ``base_url`` ends in ``/v1``."""

    def __init__(self, api_key: str = "sk-test-fake-0000", *, json_schema: bool = True,
                 model: str = "gpt-4o-mini-2024-07-18") -> None:
        self.api_key = api_key
        self.json_schema = json_schema  # False: reject json_schema like older models do
        self.model = model
        self.requests: list[Recorded] = []
        self._script: list[Action] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        # A short poll interval: shutdown() waits for the serve loop to notice.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def root(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def script(self, *actions: Action) -> FakeOpenAI:
        with self._lock:
            self._script.extend(actions)
        return self

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ answering

    def _next(self) -> Action:
        with self._lock:
            return self._script.pop(0) if self._script else Reply(cite_first())

    def _completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        content = reply.content(body) if callable(reply.content) else reply.content
        prompt_chars = "".join(str(m.get("content", "")) for m in body.get("messages", []))
        message: dict[str, Any] = {"role": "assistant", "content": content,
                                   "refusal": reply.refusal}
        choices = [] if reply.no_choices else [
            {"index": 0, "message": message, "finish_reason": reply.finish_reason,
             "logprobs": None}
        ]
        completion_tokens = estimate_tokens(content or reply.refusal or "")
        prompt_tokens = estimate_tokens(prompt_chars)
        return {
            "id": f"chatcmpl-fake{len(self.requests)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": reply.model or self.model,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                return

            def _send(self, status: int, payload: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("x-request-id", f"req_{len(fake.requests)}")
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered

            def _error(self, fail: Fail) -> None:
                self._send(fail.status, {"error": {"message": fail.message, "type": fail.type,
                                                   "param": fail.param, "code": fail.code}},
                           fail.headers)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(Recorded(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if not re.search(r"/chat/completions(\?|$)", self.path):
                    self._error(Fail(404, f"Unknown path {self.path}", "invalid_request_error"))
                    return
                auth = self.headers.get("Authorization", "")
                given = auth.removeprefix("Bearer ") if auth else self.headers.get("api-key", "")
                if given != fake.api_key:
                    # Hostile on purpose: echoes the key it was given, as some servers do.
                    self._error(Fail(401, f"Incorrect API key provided: {given}.",
                                     "invalid_request_error", "invalid_api_key"))
                    return
                fmt = (body.get("response_format") or {}).get("type")
                if fmt == "json_schema" and not fake.json_schema:
                    self._error(Fail(
                        400,
                        "Invalid parameter: 'response_format' of type 'json_schema' is not "
                        "supported with this model.",
                        "invalid_request_error", None, "response_format",
                    ))
                    return
                action = fake._next()
                if isinstance(action, Stall):
                    time.sleep(action.seconds)
                    action = action.then or Reply(cite_first())
                if isinstance(action, Fail):
                    self._error(action)
                else:
                    self._send(200, fake._completion(action, body))

        return Handler
