"""The one redactor (taskeval.redact) the core and the bot share: shapes and registered secrets."""

from __future__ import annotations

import json

import pytest

from bot import logs
from taskeval.redact import redact, register_secret


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ("token ghp_" + "a" * 36, "ghp_"),
        ("ghs_" + "B" * 36 + " expired", "ghs_"),
        ("github_pat_11ABCDEFG0123456789_abcdefghij", "github_pat_"),
        ("key sk-proj-abc123def456", "sk-proj"),
        ("jwt eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJlLXZhbHVl", "eyJ"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnop"),
        ("Authorization: token 0123456789abcdef0123456789abcdef01234567", "0123456789abcdef"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow"),
        # Inside a JSON log line a newline is "\n": the shape is still found after the escape.
        (json.dumps({"msg": "line\nghp_" + "c" * 36}), "ghp_"),
    ],
    ids=["ghp", "ghs", "fine-grained", "openai", "jwt", "bearer", "token-header", "pem", "json"],
)
def test_credential_shapes_are_redacted(text: str, leaked: str) -> None:
    cleaned = redact(text)
    assert leaked not in cleaned and "[redacted]" in cleaned


@pytest.mark.parametrize(
    "text",
    ["the token probably lacks `pull-requests: read`", "check GITHUB_TOKEN or the App key",
     "sha 6dcb09b5b57875f334f61aebed695e2e4193db5e", "a short sk-1 is not a key"],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_registered_secrets_are_redacted_wherever_they_are_echoed() -> None:
    register_secret("plain-40-hex-token-0123456789abcdef0123", None, "")
    assert redact("echo plain-40-hex-token-0123456789abcdef0123 here") == "echo [redacted] here"
    assert redact("extra s3cret-extra-value", "s3cret-extra-value") == "extra [redacted]"


def test_short_values_are_not_secrets_unless_an_operator_configured_them() -> None:
    register_secret("word")
    assert redact("a word") == "a word"
    logs.register_secrets(["w3b7"])  # the bot's own settings: a short webhook secret still counts
    assert redact("sig w3b7") == "sig [redacted]"
    assert logs.redact is redact


def test_each_long_line_of_a_registered_key_is_secret_on_its_own() -> None:
    line = "Zm9vYmFyYmF6cXV4" * 4
    register_secret(f"-----BEGIN PRIVATE KEY-----\n{line}\n-----END PRIVATE KEY-----")
    assert line not in redact(f"logged: {line}")
