"""``POST /webhook``: verify, store, acknowledge. Nothing slow happens here.

GitHub waits 10 seconds for an answer; the receiver only checks the signature, decides what the
delivery means (a pure function), and commits it to the queue before answering 202, so an
acknowledged delivery is never lost. Evaluation happens in workers.

Signature checking is ``hmac`` from the standard library (GitHub's documented scheme): a
dependency would add nothing over these few lines.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import time
from typing import Any

from flask import Blueprint, Response, jsonify, request
from sqlalchemy.exc import InterfaceError, OperationalError
from werkzeug.exceptions import RequestEntityTooLarge

from bot import logs
from bot.jobs import events
from bot.web import outcome_events
from bot.web.state import state
from taskeval.store.db import StoreBusy

log = logging.getLogger("bot.webhook")
webhook = Blueprint("webhook", __name__)

_DELIVERY_RE = re.compile(r"^[A-Za-z0-9-]{1,100}$")
_EVENT_RE = re.compile(r"^[a-z_]{1,64}$")
# A 503 (the store could not take the delivery in time) says when to try again.
RETRY_AFTER_SECONDS = 10


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    """``X-Hub-Signature-256`` is ``sha256=`` + hex HMAC-SHA256 of the raw body; constant time."""
    if not header:
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode("utf-8", "replace"))


def storage_fault(exc: BaseException) -> str:
    """Why the database refused, in words safe to show GitHub: no host, URL or SQL."""
    if isinstance(exc, StoreBusy):
        return "database busy: another writer holds the lock"
    if isinstance(exc, OperationalError | InterfaceError):
        if "locked" in str(exc).lower() or "busy" in str(exc).lower():
            return "database busy: another writer holds the lock"
        return "database unavailable"
    return f"database error: {type(exc).__name__}"


def _answer(code: int, **body: Any) -> tuple[Response, int]:
    return jsonify(body), code


@webhook.post("/webhook")
def receive() -> tuple[Response, int]:
    started = time.perf_counter()
    delivery = request.headers.get("X-GitHub-Delivery", "").strip()
    event = request.headers.get("X-GitHub-Event", "").strip()
    with logs.context(delivery=delivery or None):
        response, code, fields = _receive(delivery, event)
        fields.update(event=event or None, status=code,
                      ms=round((time.perf_counter() - started) * 1000, 2))
        level = logging.WARNING if code >= 400 else logging.INFO
        log.log(level, "%s delivery: %s", event or "unnamed", fields.get("outcome", ""),
                extra={"fields": fields})
    return response, code


def _receive(delivery: str, event: str) -> tuple[Response, int, dict[str, Any]]:
    bot = state()
    try:
        body = request.get_data(cache=False)
    except RequestEntityTooLarge:
        reason = f"payload larger than {bot.settings.max_body_bytes} bytes"
        return *_answer(413, error=reason), {"outcome": reason}
    if not signature_ok(bot.settings.webhook_secret, body,
                        request.headers.get("X-Hub-Signature-256")):
        reason = ("missing X-Hub-Signature-256" if "X-Hub-Signature-256" not in request.headers
                  else "X-Hub-Signature-256 does not match the body")
        return *_answer(401, error=f"bad signature: {reason}"), {"outcome": reason}
    if not _DELIVERY_RE.match(delivery):
        reason = "missing or malformed X-GitHub-Delivery header"
        return *_answer(400, error=reason), {"outcome": reason}
    if not _EVENT_RE.match(event):
        reason = "missing or malformed X-GitHub-Event header"
        return *_answer(400, error=reason), {"outcome": reason}
    if request.mimetype != "application/json":
        reason = (f"content type {request.mimetype or '(none)'} is not supported; "
                  "set the webhook content type to application/json")
        return *_answer(415, error=reason), {"outcome": reason}
    try:
        payload = json.loads(body)
    except ValueError as exc:  # not JSON, not UTF-8, or an integer of thousands of digits
        reason = f"malformed JSON: {exc}"
        return *_answer(400, error=reason), {"outcome": reason}
    except RecursionError:  # json's C parser recurses per nesting level; GitHub nests a few
        reason = "malformed JSON: nested too deeply"
        return *_answer(400, error=reason), {"outcome": reason}
    if not isinstance(payload, dict):
        reason = "malformed payload: expected a JSON object"
        return *_answer(400, error=reason), {"outcome": reason}
    logs.bind(**events.correlation(payload))
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    try:
        decision = events.decide(event, payload)
    except events.PayloadError as exc:
        return *_answer(400, error=f"malformed payload: {exc}"), {"outcome": str(exc)}
    outcomes = outcome_events.writer(bot.queue.engine, event, payload)
    try:
        ack = bot.queue.accept(delivery, event, action, decision, also=outcomes)
    except Exception as exc:  # never acknowledge what was not stored
        cause = storage_fault(exc)
        expected = isinstance(exc, OperationalError | InterfaceError | StoreBusy)
        detail = (str(exc).strip().splitlines() or [""])[0]
        log.error("could not store the delivery: %s: %s", cause, detail, exc_info=not expected)
        reason = (f"could not store the delivery ({cause}); it was not accepted and can be "
                  "redelivered")
        response, code = _answer(503, error=reason)
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response, code, {"outcome": reason}
    if ack.job_id is not None:
        logs.bind(job=ack.job_id)
    fields = {"outcome": ack.message, "ack": ack.status, "action": action}
    if ack.status == "pong":
        return *_answer(200, message="pong", delivery=delivery), fields
    return *_answer(202, message=ack.message, status=ack.status, job=ack.job_id,
                    delivery=delivery), fields
