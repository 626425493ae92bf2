"""Who wrote the commits when GitHub links no account (taskeval/signals/identity.py,
docs/turns.md#who-wrote-the-commits): one table case per identity rule on GitHub's documented
commit shape, the rescue class and ``agent.human_intervention`` on what stays unknown, and the
invariant that no result says ``clean`` while the signal that decides rescues is inconclusive.

The commits are what ``GET /repos/{owner}/{repo}/pulls/{n}/commits`` answers (REST's commit
object: ``author`` and ``committer`` the linked accounts, null when the e-mail belongs to none;
``commit.author`` / ``commit.committer`` the git identity; the trailers in ``commit.message``),
read through collection's own converter.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from benchmarks.rescore_bench import variants
from taskeval.config import LoadedConfig, Settings
from taskeval.evidence import build_bundle
from taskeval.github.convert import commit as rest_commit_of
from taskeval.models import EvidenceBundle
from taskeval.pipeline import Options, score_bundle
from taskeval.raw import CollectionIssue, RawCommit, RawUser
from taskeval.signals import Ctx, compute_signals
from taskeval.signals.closure import rescue_of
from taskeval.signals.identity import RULES, authors_of
from taskeval.signals.turns import intervention_of, people_of, turns_of

from . import builders as b

ROOT = Path(__file__).resolve().parents[1]
NOREPLY = "users.noreply.github.com"


def account(login: str, kind: str = "User") -> dict[str, Any]:
    """A REST ``simple-user`` as a commit's ``author`` / ``committer`` carries it."""
    return {"login": login, "id": abs(hash(login)) % 10**8, "node_id": f"U_{login}", "type": kind,
            "site_admin": False, "html_url": f"https://github.com/{login}"}


def rest_commit(seed: str, message: str, minutes: float, *, login: str | None = None,
                name: str = "Jane Roe", email: str = "jane@corp.example",
                committer: str | None = None, committer_name: str | None = None,
                committer_email: str | None = None, kind: str = "User") -> RawCommit:
    """One item of the PR's commit listing, shaped as GitHub documents it, converted by
    collection's REST converter. ``login=None``: GitHub links the author to no account
    (``"author": null``); the committer is the author committing locally unless given."""
    sha = b.sha(seed)
    when = b.at(minutes).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = {
        "url": f"https://api.github.com/repos/{b.REPO}/commits/{sha}", "sha": sha,
        "node_id": f"C_{sha[:12]}", "html_url": f"https://github.com/{b.REPO}/commit/{sha}",
        "comments_url": f"https://api.github.com/repos/{b.REPO}/commits/{sha}/comments",
        "commit": {
            "url": f"https://api.github.com/repos/{b.REPO}/git/commits/{sha}",
            "author": {"name": name, "email": email, "date": when},
            "committer": {"name": committer_name or name, "email": committer_email or email,
                          "date": when},
            "message": message, "tree": {"sha": b.sha(f"tree-{seed}"), "url": "x"},
            "comment_count": 0,
            "verification": {"verified": False, "reason": "unsigned", "signature": None,
                             "payload": None, "verified_at": None},
        },
        "author": account(login, kind) if login else None,
        "committer": account(committer) if committer else (account(login, kind) if login else None),
        "parents": [{"url": "x", "sha": b.sha(f"{seed}-parent")}],
    }
    return rest_commit_of(payload)


WEB = {"committer": "web-flow", "committer_name": "GitHub", "committer_email": "noreply@github.com"}


def agent_commits() -> list[RawCommit]:
    """Copilot's three commits, linked to its account as GitHub links them."""
    return [rest_commit(seed, msg, minutes, login="Copilot", kind="Bot", name="copilot-swe-agent[bot]",
                        email=f"198982749+Copilot@{NOREPLY}") for seed, msg, minutes in b.DEFAULT_COMMITS]


def pr(*extra: RawCommit, reviewers: tuple[RawUser, ...] = (b.ALICE,), **kw: Any) -> EvidenceBundle:
    """The builders' merged Copilot PR with ``extra`` commits after the agent's; alice reviews and
    merges it."""
    reviews = [b.review(7001 + n, who, "APPROVED", 90 + n) for n, who in enumerate(reviewers)]
    commits = kw.pop("commits", None) or [*agent_commits(), *extra]
    bundle = build_bundle(b.merged_agent_pr(commits=commits, reviews=reviews, **kw))
    bundle.facts.timeline = []
    return bundle


def codex(*extra: RawCommit) -> EvidenceBundle:
    """A Codex PR: opened from its operator alice's account, her git identity on the commits."""
    own = [rest_commit(f"a{n}", msg, m, login="alice", name="alice", email=f"9+alice@{NOREPLY}")
           for n, (_, msg, m) in enumerate(b.DEFAULT_COMMITS)]
    return pr(commits=[*own, *extra], reviewers=(b.BOB,), user=b.ALICE, head_ref="codex/retry",
              merged_by=b.BOB)


def cursor(*extra: RawCommit) -> EvidenceBundle:
    """A Cursor PR: opened by alice, the agent committing as cursoragent."""
    own = [rest_commit(f"a{n}", msg, m, login="cursoragent", name="Cursor Agent",
                       email="cursoragent@cursor.com") for n, (_, msg, m) in enumerate(b.DEFAULT_COMMITS)]
    return pr(commits=[*own, *extra], reviewers=(b.BOB,), user=b.ALICE, head_ref="cursor/retry",
              merged_by=b.BOB)


def ctx_of(bundle: EvidenceBundle) -> Ctx:
    return Ctx(bundle, Settings())


# --------------------------------------------------------------------------- one case per rule


@dataclass(frozen=True)
class Case:
    name: str
    bundle: Callable[[], EvidenceBundle]
    rule: str
    login: str | None
    role: str | None  # the writer's role in the PR (People.author_role); None: unknown


SUBJECT = "fix: handle the empty input"
PAIRED = ("Alice Liddell", "alice")
CASES = [
    Case("linked account", lambda: pr(rest_commit("x", SUBJECT, 70, login="bob")), "account", "bob",
         "person"),
    Case("agent: its no-reply address", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="copilot-swe-agent[bot]", email=f"198982749+Copilot@{NOREPLY}")),
        "agent", "Copilot", "agent"),
    Case("agent: its account as the git name", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="cursoragent", email="agent@build-box.internal")), "agent", "cursoragent", "agent"),
    Case("agent: an identity its co-author patterns describe", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="Claude", email="noreply@anthropic.com")), "agent", "claude[bot]", "agent"),
    Case("no-reply address <id>+<login>", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="B. Builder", email=f"4242+bob@{NOREPLY}")), "noreply", "bob", "person"),
    Case("no-reply address <login> (the older form)", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="B. Builder", email=f"bob@{NOREPLY}")), "noreply", "bob", "person"),
    Case("git name is a participant's login", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="Alice", email="alice@corp.example")), "name", "alice", "reviewer"),
    Case("git name a linked commit pairs with a login", lambda: pr(
        rest_commit("x", "docs: note the retry", 65, login="alice", name=PAIRED[0], email=f"9+alice@{NOREPLY}"),
        rest_commit("y", SUBJECT, 70, name=PAIRED[0], email="alice@corp.example")), "name", "alice", "reviewer"),
    Case("git name a linked committer pairs with a login", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="Carol Danvers", email="carol@corp.example", committer="carol",
        committer_name="Carol Danvers", committer_email=f"7+carol@{NOREPLY}")), "name", "carol", "person"),
    Case("git name a co-author trailer pairs with a login", lambda: pr(
        rest_commit("x", f"docs: note the retry\n\nCo-authored-by: Bob Builder <4242+bob@{NOREPLY}>", 65,
                    login="Copilot", kind="Bot", name="copilot-swe-agent[bot]",
                    email=f"198982749+Copilot@{NOREPLY}"),
        rest_commit("y", SUBJECT, 70, name="Bob Builder", email="bob@corp.example")), "name", "bob",
        "operator"),  # Copilot co-authors the person it works for: the trailer made bob its operator
    Case("git name two participants share: ambiguous", lambda: pr(
        rest_commit("x", "docs: a", 61, login="sam-a", name="Sam", email=f"1+sam-a@{NOREPLY}"),
        rest_commit("y", "docs: b", 62, login="sam-b", name="Sam", email=f"2+sam-b@{NOREPLY}"),
        rest_commit("z", SUBJECT, 70, name="Sam", email="sam@corp.example")), "unattributed", None, None),
    Case("co-author trailer naming one person", lambda: codex(rest_commit(
        "x", f"{SUBJECT}\n\nCo-authored-by: bob <4242+bob@{NOREPLY}>", 70, name="build box",
        email="ci@corp.example")), "co-author", "bob", "reviewer"),
    Case("co-author trailer naming the agent", lambda: pr(rest_commit(
        "x", f"{SUBJECT}\n\nCo-Authored-By: Claude <noreply@anthropic.com>", 70)), "co-author",
        "claude[bot]", "agent"),
    Case("co-author line under Claude Code's footer, no trailer block", lambda: pr(rest_commit(
        "x", f"{SUBJECT}\n\n- Fix the regression\n\n\U0001f916 Generated with [Claude Code](https://claude.ai/code)\n"
        "Co-Authored-By: Claude <noreply@anthropic.com>", 70)), "co-author", "claude[bot]", "agent"),
    Case("co-author trailers naming two people: ambiguous", lambda: pr(rest_commit(
        "x", f"{SUBJECT}\n\nCo-authored-by: bob <4242+bob@{NOREPLY}>\nCo-authored-by: alice "
        f"<9+alice@{NOREPLY}>", 70)), "unattributed", None, None),
    Case("co-author trailer the agent writes for its operator: names no writer", lambda: pr(
        rest_commit("x", f"{SUBJECT}\n\nCo-authored-by: alice <9+alice@{NOREPLY}>", 70), assignees=[b.ALICE]),
        "unattributed", None, None),
    Case("co-author trailer naming someone the evidence cannot name", lambda: pr(rest_commit(
        "x", f"{SUBJECT}\n\nCo-authored-by: Pat Doe <pat@corp.example>", 70)), "unattributed", None, None),
    Case("web editor: a person's", lambda: pr(rest_commit("x", SUBJECT, 70, **WEB)), "web-editor", None,
         "person"),
    Case("web editor with a participant's name: that participant", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="alice", email="alice@corp.example", **WEB)), "name", "alice", "reviewer"),
    Case("nothing names the writer", lambda: pr(rest_commit("x", SUBJECT, 70)), "unattributed", None, None),
]


def test_every_rule_has_a_case_and_a_row_in_the_docs() -> None:
    assert {c.rule for c in CASES} == set(RULES)
    docs = (ROOT / "docs" / "turns.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert f"| `{rule}` |" in docs, rule


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule(case: Case) -> None:
    ctx = ctx_of(case.bundle())
    last = ctx.facts.commits[-1]
    found = authors_of(ctx)[last.sha]
    assert (found.rule, found.login) == (case.rule, case.login)
    assert people_of(ctx).author_role(found) == case.role


def test_the_bundle_keeps_the_git_identity_only_where_it_is_the_evidence() -> None:
    bundle = pr(rest_commit("x", SUBJECT, 70, name="Jane Roe", email="jane@corp.example", **WEB),
                rest_commit("y", "docs: a", 80, login="bob", name="Bob Builder", email="bob@home.example"),
                rest_commit("z", "docs: b", 90, login="carol", name="carol", email="carol@home.example"))
    unlinked, named, plain = bundle.facts.commits[-3:]
    assert (unlinked.author_name, unlinked.author_email) == ("Jane Roe", "jane@corp.example")
    # The committer is web-flow: its login says who it is, so its e-mail is not kept either.
    assert (unlinked.committer_login, unlinked.committer_name, unlinked.committer_email) == (
        "web-flow", "GitHub", None)
    local = pr(rest_commit("w", SUBJECT, 70, name="Jane Roe", email="jane@corp.example")).facts.commits[-1]
    assert (local.committer_name, local.committer_email) == ("Jane Roe", "jane@corp.example")
    # A linked author's e-mail is never kept; the name only where it says more than the login.
    assert (named.author_name, named.author_email, named.committer_name) == ("Bob Builder", None, None)
    assert (plain.author_name, plain.author_email) == (None, None)
    form = bundle.json_form()["facts"]["commits"][-1]
    assert not {"authorName", "authorEmail", "committerName", "committerEmail"} & set(form)


def test_stored_bundles_keep_their_form_and_hash() -> None:
    """Bundles stored before the git identity (the frozen spread the re-scoring tests own) load
    and serialise to the very JSON they were stored as, so their bundleHash holds."""
    forms = json.loads(gzip.decompress((ROOT / "tests" / "scorer_spread.json.gz").read_bytes()))
    for form in forms:
        assert EvidenceBundle.model_validate(form).json_form() == form


# --------------------------------------------------------------------------- rescue and the signal


@dataclass(frozen=True)
class RescueCase:
    name: str
    bundle: Callable[[], EvidenceBundle]
    cls: str
    people: int | None
    unattributed: int
    signal: str  # agent.human_intervention's status
    says: list[str] = field(default_factory=list)  # fragments of the rescue's reason


RESCUES = [
    RescueCase("every commit without an account (the issue's case)", lambda: pr(commits=[
        rest_commit(f"u{n}", msg, m, name="Dev Box", email="dev@corp.example")
        for n, (_, msg, m) in enumerate(b.DEFAULT_COMMITS)]), "unknown", None, 3, "inconclusive",
        ["Who finished the work is unknown", "3 of 3 commits have no GitHub account"]),
    RescueCase("a maintainer's unlinked commit beside the agent's", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="Maya Maintainer", email="maya@corp.example")), "unknown", None, 1, "ok",
        ["1 of 4 commits has no GitHub account"]),
    RescueCase("a reviewer's no-reply commit", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="A.", email=f"9+alice@{NOREPLY}")), "taken_over", 1, 0, "ok", ["alice"]),
    RescueCase("a web-editor commit on an agent's PR", lambda: pr(rest_commit("x", SUBJECT, 70, **WEB)),
               "taken_over", 1, 0, "ok", ["a person (web editor)"]),
    RescueCase("a web-editor commit on a PR its operator opened (Codex)", lambda: codex(
        rest_commit("x", SUBJECT, 70, **WEB)), "unknown", None, 1, "ok"),
    RescueCase("a web-editor commit beside an agent committing as itself (Cursor)", lambda: cursor(
        rest_commit("x", SUBJECT, 70, **WEB)), "taken_over", 1, 0, "ok"),
    RescueCase("the agent's own identity without an account", lambda: pr(rest_commit(
        "x", SUBJECT, 70, name="copilot-swe-agent[bot]", email=f"198982749+Copilot@{NOREPLY}")),
        "clean", 0, 0, "ok"),
    RescueCase("unlinked commits before the owner's first: no one's rescue either way", lambda: pr(commits=[
        rest_commit("e1", "feat: groundwork", 5), rest_commit("e2", "feat: more groundwork", 6),
        *agent_commits()]), "clean", 0, 0, "ok"),
    RescueCase("an unlinked merge of the base branch", lambda: pr(rest_commit(
        "x", "Merge branch 'main' into copilot/retry-backoff", 70)), "clean", 0, 0, "ok"),
    RescueCase("sent back, and a commit nobody can name", lambda: _sent_back(), "unknown", None, 1, "ok",
               ["people sent the work back once"]),
    RescueCase("a person's commit beside one nobody can name", lambda: pr(
        rest_commit("x", SUBJECT, 70, login="bob", name="Bob", email=f"4242+bob@{NOREPLY}"),
        rest_commit("y", "fix: more", 75)), "taken_over", 1, 1,
        "ok", ["who wrote 1 other commit is unknown"]),
    RescueCase("commits that could not be read", lambda: _unread(), "unknown", None, 0, "inconclusive",
               ["the PR's commits could not be read"]),
]


def _sent_back() -> EvidenceBundle:
    bundle = build_bundle(b.merged_agent_pr(
        commits=[*agent_commits(), rest_commit("x", SUBJECT, 70)],
        reviews=[b.review(7002, b.ALICE, "CHANGES_REQUESTED", 62, body="Please handle empty input."),
                 b.review(7003, b.ALICE, "APPROVED", 90)]))
    bundle.facts.timeline = []
    return bundle


def _unread() -> EvidenceBundle:
    bundle = build_bundle(b.merged_agent_pr(commits=[], commit_count=3, issues=[
        CollectionIssue(resource="commits", message="403 Forbidden")]))
    bundle.facts.timeline = []
    return bundle


@pytest.mark.parametrize("case", RESCUES, ids=[c.name for c in RESCUES])
def test_rescue_and_the_signal(case: RescueCase) -> None:
    bundle = case.bundle()
    ctx = ctx_of(bundle)
    found = rescue_of(ctx)
    assert found is not None
    assert (found.class_, found.commits_by_people, found.unattributed_commits) == (
        case.cls, case.people, case.unattributed), found.reason
    for fragment in case.says:
        assert fragment in found.reason
    signal = next(s for s in compute_signals(bundle, Settings()) if s.id == "agent.human_intervention")
    assert signal.status == case.signal, signal.reason
    if case.unattributed:
        assert "writer is unknown" in signal.reason or "No commit's writer is known" in signal.reason


def test_the_signal_says_how_commits_without_an_account_were_attributed() -> None:
    bundle = pr(rest_commit("x", SUBJECT, 70, name="A.", email=f"9+alice@{NOREPLY}"),
                rest_commit("y", "fix: more", 75, **WEB), rest_commit("z", "fix: last", 80))
    signal = next(s for s in compute_signals(bundle, Settings()) if s.id == "agent.human_intervention")
    assert signal.value == 2 / 5
    assert "2 of 5 commits were the PR's work pushed by other people (a person (web editor) and alice)" \
        in signal.reason
    assert "1 commit whose writer is unknown" in signal.reason
    assert "2 commits without a GitHub account attributed by their git identity (1 by a no-reply " \
           "address, 1 by the web editor)" in signal.reason


@pytest.mark.parametrize(("bundle", "says"), [
    (lambda: pr(commits=[rest_commit("e1", "feat: groundwork", 5), *agent_commits()]),
     "None of the 3 commits with a known author was the PR's work done by another person (not counted: "
     "1 commit whose writer is unknown before the owner's first (no one's rescue either way))."),
    (lambda: pr(commits=[rest_commit("x", SUBJECT, 5, name="Claude", email="noreply@anthropic.com")]),
     "The only commit with a known author was not the PR's work done by another person; 1 commit without "
     "a GitHub account attributed by its git identity (1 by the agent's git identity)."),
], ids=["before the owner's first", "one commit, the agent's identity"])
def test_the_signal_says_what_it_left_out(bundle: Callable[[], EvidenceBundle], says: str) -> None:
    signal = next(s for s in compute_signals(bundle(), Settings()) if s.id == "agent.human_intervention")
    assert (signal.status, signal.score, signal.reason) == ("ok", 100, says)


def test_a_person_in_the_web_editor_takes_a_turn_on_an_agents_pr() -> None:
    ctx = ctx_of(pr(rest_commit("x", SUBJECT, 70, **WEB)))
    spans = turns_of(ctx).spans
    assert not [s for s in spans if s.evidence == ctx.commit_id(b.sha("x"))]  # no hand-over: a person's push
    assert intervention_of(ctx).counted[0].sha == b.sha("x")


# --------------------------------------------------------------------------- the invariant


def _without_accounts(seed: int, count: int) -> list[EvidenceBundle]:
    """Generated PRs in which a random share of the commits has no account: sometimes one, half,
    or all; some keep an identity the rules read (the web editor, a no-reply address)."""
    rng = random.Random(seed)
    out = []
    for raw in variants(count, seed=seed):
        commits = []
        share = rng.choice([0.0, 0.2, 0.5, 1.0])
        for c in raw.commits:
            if rng.random() < share:
                kind = rng.choice(["plain", "plain", "web", "noreply"])
                c = c.model_copy(update={
                    "author_login": None, "author_type": None,
                    "author_name": "Dev Box" if kind != "noreply" else "D.",
                    "author_email": "dev@corp.example" if kind != "noreply" else f"5+dana@{NOREPLY}",
                    "committer_login": "web-flow" if kind == "web" else None,
                    "committer_name": "GitHub" if kind == "web" else "Dev Box",
                    "committer_email": "noreply@github.com" if kind == "web" else "dev@corp.example"})
            commits.append(c)
        out.append(build_bundle(raw.model_copy(update={"commits": commits})))
    return out


def test_no_result_says_clean_while_the_signal_that_decides_rescues_is_inconclusive() -> None:
    loaded = LoadedConfig(Settings(), "defaults")
    options = Options(ai="off", env={}, trigger="rescore", evaluated_at="2026-01-01T00:00:00Z")
    seen: dict[str, int] = {}
    for bundle in _without_accounts(41, 160):
        result = score_bundle(bundle, loaded, options)
        if result.rescue is None:
            continue
        signal = next(s for s in result.signals if s.id == "agent.human_intervention")
        cls = result.rescue.class_
        seen[cls] = seen.get(cls, 0) + 1
        if signal.status == "inconclusive":
            assert cls == "unknown", (cls, signal.reason)
        if cls in ("clean", "feedback_loop"):
            assert result.rescue.unattributed_commits == 0
            assert "writer is unknown (no GitHub account" not in signal.reason
        if cls == "unknown":
            assert result.rescue.commits_by_people is None
    assert {"clean", "unknown", "taken_over"} <= set(seen), seen  # the spread reaches each


def test_the_corpus_benchmark_counts_what_it_reports(tmp_path: Path) -> None:
    """benchmarks/git_identity.py (the BENCHMARKS.md figures) on three stored results: commits
    without an account, by rule, what stays unknown, and the rescue classes before and after."""
    from benchmarks.git_identity import markdown, measure

    loaded = LoadedConfig(Settings(), "defaults")
    options = Options(ai="off", env={}, trigger="corpus", evaluated_at="2026-01-01T00:00:00Z")
    bundles = {"a": pr(rest_commit("x", SUBJECT, 70, **WEB)),  # web editor: taken over
               "b": pr(rest_commit("y", SUBJECT, 70)),  # unknown
               "c": pr()}  # every commit linked: clean
    for side, classes in (("after", None), ("before", {"a": "clean", "b": "clean", "c": "clean"})):
        folder = tmp_path / side / "Copilot"
        folder.mkdir(parents=True)
        for name, bundle in bundles.items():
            result = json.loads(score_bundle(bundle, loaded, options).to_json())
            if classes:
                result["rescue"]["class"] = classes[name]
            (folder / f"{name}.json").write_text(json.dumps(result), encoding="utf-8")
    found = measure(tmp_path / "after", tmp_path / "before")
    assert (found["prs"], found["commits"], found["unlinked"], found["prsWithUnlinked"]) == (3, 11, 2, 2)
    assert found["rules"] == {"web-editor": 1, "unattributed": 1}
    assert (found["workUnattributed"], found["prsWorkUnattributed"]) == (1, 1)
    assert found["rescueMoves"] == {"clean->clean": 1, "clean->taken_over": 1, "clean->unknown": 1}
    text = markdown(found)
    assert "**2 commits have no GitHub account**" in text and "| clean | 1 | 1 | 1 | 3 |" in text
