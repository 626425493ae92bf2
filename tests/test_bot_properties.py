"""Property tests for ``POST /webhook``: whatever arrives, correctly signed, the receiver answers
without a 5xx or a traceback, every 4xx names the problem, and only what it acknowledged is stored.

Every body is signed with the real secret, so the parser and the event rules are exercised, not
just the signature check. Each test runs on SQLite and, when ``DATABASE_URL_POSTGRES`` is set, on
PostgreSQL, which refuses more than SQLite does (NUL in text, over-long strings, integer ranges).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from bot.app import create_app
from taskeval.store.db import deliveries, make_engine
from tests.bot.helpers import SECRET, delivery_headers, payload, settings_for

pytest_plugins = ["tests.bot.fixtures"]

LIMIT = 64 * 1024  # the app's body limit in these tests
PROPERTY = settings(max_examples=120, deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])
_ids = itertools.count(1)

# What a 4xx may say: each names the header, the limit, or the field that is wrong.
REASONS = re.compile(
    r"^(malformed JSON: .+"
    r"|malformed payload: expected a JSON object"
    r"|malformed payload: [a-z_]+ payload: [\w.]+: .+"
    r"|missing or malformed X-GitHub-(Delivery|Event) header"
    r"|content type .+ is not supported; set the webhook content type to application/json"
    r"|payload larger than \d+ bytes)$",
    re.DOTALL,
)

EVENTS = ["pull_request", "issue_comment", "installation", "installation_repositories", "ping",
          "push"]
FIXTURES = {
    "pull_request": ["pull_request.closed.merged", "pull_request.closed.unmerged",
                     "pull_request.opened"],
    "issue_comment": ["issue_comment.created.evaluate", "issue_comment.created.bot",
                      "issue_comment.created.on_issue", "issue_comment.edited.evaluate"],
    "installation": ["installation.created"],
    "installation_repositories": ["installation_repositories.added"],
}
NASTY = ["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "é" * 70, "x" * 300, "/evaluate",
         "> /evaluate", "closed", "created", "octo-org/widgets", "../../etc", "0" * 40,
         "6dcb09b5b57875f334f61aebed695e2e4193db5e", "[bot]", "🙂" * 40, "\u202e", "NaN"]
FIELDS = ["action", "pull_request", "number", "merged", "head", "sha", "user", "login", "type",
          "repository", "full_name", "installation", "id", "issue", "comment", "body",
          "account", "repositories", "repositories_added", "repositories_removed", "sender"]


# ------------------------------------------------------------------------------- strategies

EDGE_INTS = [0, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 2**70]
texts = st.text(max_size=40) | st.sampled_from(NASTY)
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.sampled_from(EDGE_INTS)
           | st.floats(allow_nan=True, allow_infinity=True) | texts)
keys = st.sampled_from(FIELDS) | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=25,
)


def _shaped(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts with any subset of the named fields, each usually well-typed, sometimes not."""
    return st.fixed_dictionaries({}, optional={k: v | json_values for k, v in fields.items()})


ids = st.integers(-5, 2**64) | st.sampled_from([1, 42, 5234567])
users = _shaped(login=texts | st.sampled_from(["octocat", "renovate[bot]"]),
                type=st.sampled_from(["User", "Bot"]))
repos = _shaped(full_name=st.sampled_from(["octo-org/widgets", "a/b", "no-slash"]) | texts)
installations = _shaped(id=ids, account=_shaped(login=texts))
shaped_payloads = st.one_of(
    _shaped(action=st.sampled_from(["closed", "opened"]) | texts,
            pull_request=_shaped(number=ids, merged=st.booleans(), user=users,
                                 head=_shaped(sha=st.sampled_from(["a" * 40, "A" * 40]) | texts)),
            repository=repos, installation=installations),
    _shaped(action=st.sampled_from(["created", "edited"]) | texts,
            issue=_shaped(number=ids, pull_request=st.just({"url": "x"}) | st.none()),
            comment=_shaped(id=ids, body=st.sampled_from(["/evaluate", "hi"]) | texts,
                            user=users),
            repository=repos, installation=installations),
    _shaped(action=st.sampled_from(["created", "deleted", "added", "new_permissions_accepted"])
            | texts, installation=installations,
            repositories=st.lists(_shaped(full_name=texts), max_size=3),
            repositories_added=st.lists(_shaped(full_name=texts), max_size=3),
            sender=users),
)


# ---------------------------------------------------------------------------------- plumbing


@pytest.fixture
def app(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    # Hundreds of commits: skip the fsync per commit, which this property does not test.
    monkeypatch.setenv("TASKEVAL_SQLITE_SYNCHRONOUS", "normal")
    engine = make_engine(db_url)
    app = create_app(settings_for(db_url, max_body_bytes=LIMIT), engine=engine)
    yield app
    engine.dispose()


def send(client: FlaskClient, event: str, body: bytes, **overrides: str) -> tuple[str, Any]:
    delivery = f"prop-{next(_ids)}"
    headers = {**delivery_headers(event, body, delivery), **overrides}
    return headers["X-GitHub-Delivery"], client.post("/webhook", data=body, headers=headers)


def stored(app: Flask, delivery: str) -> bool:
    with app.extensions["taskeval"].engine.connect() as conn:
        return conn.execute(select(deliveries.c.id).where(deliveries.c.id == delivery)).first() \
            is not None


def check(app: Flask, delivery: str, response: Any, *, stored_before: bool = False) -> dict[str, Any]:
    """What holds for every answer, whatever was sent. ``stored_before``: hypothesis reuses the
    app across examples, so a generated delivery id may already have been stored by an earlier one."""
    text = response.get_data(as_text=True)
    assert response.status_code < 500, text
    assert response.is_json, text
    assert "Traceback" not in text and 'File "' not in text
    assert SECRET not in text
    data = response.get_json()
    if response.status_code >= 400:
        assert REASONS.match(data["error"]), data["error"]
        assert stored_before or not stored(app, delivery), "refused but stored"
    else:
        assert response.status_code in (200, 202)
        assert stored(app, delivery), "acknowledged but not stored"
    return data  # type: ignore[no-any-return]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key or index path inside a JSON value (not the root)."""
    out: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, child in items:
        out.append((*prefix, key))
        out.extend(paths(child, (*prefix, key)))
    return out


# ---------------------------------------------------------------------------------- properties


@PROPERTY
@given(event=st.sampled_from(EVENTS), body=json_values | shaped_payloads)
@example(event="pull_request", body={"action": "closed", "pull_request": {"number": 2**70}})
def test_any_signed_json_gets_an_answer_not_a_crash(app: Flask, event: str, body: Any) -> None:
    delivery, response = send(app.test_client(), event, json.dumps(body).encode())
    check(app, delivery, response)


@PROPERTY
@given(data=st.data())
def test_one_wrong_field_in_a_documented_payload_is_named(app: Flask, data: st.DataObject) -> None:
    """Start from GitHub's documented payload and break one thing: delete a key or give it
    another value. A refusal must name that field, the object holding it, or the field inside
    the new value that is missing or wrong."""
    event = data.draw(st.sampled_from(sorted(FIXTURES)))
    body = payload(data.draw(st.sampled_from(FIXTURES[event])))
    path = data.draw(st.sampled_from(paths(body)))
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    old = parent[path[-1]]
    if isinstance(parent, dict) and data.draw(st.booleans()):
        del parent[path[-1]]
    elif isinstance(old, str | int) and not isinstance(old, bool) and data.draw(st.booleans()):
        # same type, hostile value: what a column or GitHub's own limits may not hold
        parent[path[-1]] = data.draw(st.sampled_from(NASTY if isinstance(old, str)
                                                     else EDGE_INTS))
    else:
        parent[path[-1]] = data.draw(json_values)
    delivery, response = send(app.test_client(), event, json.dumps(body).encode())
    answer = check(app, delivery, response)
    if response.status_code == 400:
        named = answer["error"].split(": ")[2]
        dotted = ".".join(str(p) for p in path)
        assert named == dotted or (named + ".").startswith(dotted + ".") \
            or dotted.startswith(named + "."), (named, dotted)


@PROPERTY
@given(body=st.binary(max_size=300)
       | st.sampled_from([b"", b"\xff\xfe\x00", b'{"a": "\xc3\x28"}', b"[" * 5000 + b"]" * 5000,
                          b'{"a":' * 3000 + b"1" + b"}" * 3000, b"\xef\xbb\xbf{}", b"null"]))
def test_bytes_that_are_not_a_json_object_are_refused(app: Flask, body: bytes) -> None:
    delivery, response = send(app.test_client(), "pull_request", body)
    check(app, delivery, response)
    assert response.status_code in (202, 400)


header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=120)


@PROPERTY
@given(delivery=header_text | st.uuids().map(str), event=header_text | st.sampled_from(EVENTS),
       content_type=header_text | st.sampled_from(
           ["application/json", "application/json; charset=utf-8", "text/plain",
            "application/x-www-form-urlencoded", "APPLICATION/JSON", ""]))
def test_any_headers_get_an_answer_that_names_the_header(app: Flask, delivery: str, event: str,
                                                         content_type: str) -> None:
    body = json.dumps(payload("pull_request.closed.merged")).encode()
    headers = {**delivery_headers(event, body, delivery), "Content-Type": content_type}
    seen = stored(app, delivery.strip())
    response = app.test_client().post("/webhook", data=body, headers=headers)
    check(app, delivery.strip(), response, stored_before=seen)
    if response.status_code == 415:
        assert "application/json" in response.get_json()["error"]


@settings(PROPERTY, max_examples=12)
@given(size=st.integers(LIMIT - 64, LIMIT + 4096) | st.integers(LIMIT, 4 * LIMIT))
def test_bodies_over_the_limit_are_refused_by_size(app: Flask, size: int) -> None:
    filler = "x" * max(0, size - len('{"zen": ""}'))
    body = json.dumps({"zen": filler}).encode()
    delivery, response = send(app.test_client(), "ping", body)
    check(app, delivery, response)
    assert (response.status_code == 413) == (len(body) > LIMIT)
    if len(body) > LIMIT:
        assert str(LIMIT) in response.get_json()["error"]


def _set(name: str, path: str, value: Any) -> dict[str, Any]:
    data = payload(name)
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    return data


@pytest.mark.parametrize(
    ("event", "data", "named"),
    [
        ("pull_request", _set("pull_request.closed.merged", "pull_request.number", 2**31),
         "pull_request.number"),
        ("pull_request", _set("pull_request.closed.merged", "installation.id", 2**63),
         "installation.id"),
        ("pull_request", _set("pull_request.closed.merged", "repository.full_name",
                              "octo-org/" + "w" * 300), "repository.full_name"),
        ("issue_comment", _set("issue_comment.created.evaluate", "comment.user.login", "u" * 101),
         "comment.user.login"),
        ("issue_comment", _set("issue_comment.created.bot", "comment.user.login", "a\x00b[bot]"),
         "comment.user.login"),
        ("issue_comment", _set("issue_comment.created.evaluate", "comment.id", 2**63),
         "comment.id"),
        ("installation", _set("installation.created", "action", "y" * 100), "action"),
        ("installation", _set("installation.created", "installation.account.login", "\ud800"),
         "installation.account.login"),
    ],
    ids=["pr-number", "installation-id", "repo-name", "login-length", "login-nul", "comment-id",
         "installation-action", "account-surrogate"],
)
def test_values_the_database_cannot_hold_are_refused_by_name(
    app: Flask, event: str, data: dict[str, Any], named: str
) -> None:
    """Each of these once reached the database and came back as a 503, which GitHub shows as
    "failed, redeliver", forever: the payload itself is wrong, so the answer is a 400."""
    delivery, response = send(app.test_client(), event, json.dumps(data).encode())
    answer = check(app, delivery, response)
    assert response.status_code == 400
    assert f" payload: {named}: " in answer["error"]


@pytest.mark.parametrize("action", ["x" * 300, "a\x00b", "\udfff"],
                         ids=["long", "nul", "lone-surrogate"])
def test_free_text_that_is_stored_is_made_to_fit(app: Flask, action: str) -> None:
    """An action the rules ignore is still stored with the delivery; it is clipped to fit."""
    data = {**payload("pull_request.closed.merged"), "action": action}
    delivery, response = send(app.test_client(), "pull_request", json.dumps(data).encode())
    assert check(app, delivery, response)["status"] == "ignored"
