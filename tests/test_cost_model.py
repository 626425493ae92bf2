"""The cost model's promises hold: the rate-limit budget an evaluation uses is exactly the requests
it sends, and the comment's share is what docs/reliability.md says. Runs the benchmark on the
smallest PR (about 3 s), so its figures cannot drift from the code again unnoticed."""

from __future__ import annotations

import contextlib
import io
import json

from benchmarks import cost_model


def test_every_request_is_billed_and_the_comment_costs_what_the_docs_say() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cost_model.main(["--sizes", "1", "--json", "--backfill-prs", "0"])
    assert code == 0
    measured = json.loads(out.getvalue())["costs"]
    costs = {c["adapter"]: c for c in measured if c["api"] == "rest"}
    assert set(costs) == {"cli", "action", "app"}
    for adapter, cost in costs.items():
        # Every request is charged but a 304: the comment's listing repeats the evidence's.
        assert cost["budget_used"] == cost["requests"] - cost["not_modified"], adapter
        assert cost["not_modified"] == 1, adapter
        assert cost["collection"] + cost["comment"] == cost["requests"], adapter
        assert cost["rerun"] == cost["requests"] - 1, adapter  # a re-run skips the second listing
        # Re-evaluating the PR: its reads are conditional, and only what the first evaluation's
        # comment changed (the PR, its issue object, its timeline), the answers GitHub gives no
        # ETag (the config's 404, the Actions token's refused GET /user) and the comment's
        # update are charged.
        assert cost["rerun_charged"] <= 6 < cost["rerun"], adapter
        assert cost["judge_status"] == "ok", adapter
    # The bot knows its login; the CLI and the Action ask for theirs (GET /user).
    assert (costs["cli"]["comment"], costs["action"]["comment"], costs["app"]["comment"]) == (4, 4, 3)
    assert costs["cli"]["collection"] == costs["action"]["collection"] == costs["app"]["collection"]
    # Over GraphQL: one query of one point (the timeline in it), one more for the labels of the
    # issue the PR's body fixes (#12), and the REST reads GraphQL lacks: the issue object and
    # the workflow runs, and for a Copilot PR its timeline (the agent's session events).
    # Every adapter writes the comment with one mutation (addComment,
    # whose answer lists the comments the race check reads), found from what the query read:
    # no REST listing, no write over REST, no GET /user.
    graphql = {c["adapter"]: c for c in measured if c["api"] == "graphql" and c["author"] == "person"}
    copilot = {c["adapter"]: c for c in measured if c["api"] == "graphql" and c["author"] == "copilot"}
    for adapter, cost in graphql.items():
        assert (cost["collection"], copilot[adapter]["collection"]) == (2, 3), adapter
        assert cost["budget_used"] == cost["requests"] - cost["not_modified"], adapter
        assert copilot[adapter]["points"] == cost["points"], adapter
    assert {a: (c["graphql_queries"], c["points"], c["comment_queries"], c["comment_points"],
                c["comment"]) for a, c in graphql.items()} == {
        "action": (3, 3, 1, 1, 0), "cli": (3, 3, 1, 1, 0), "app": (3, 3, 1, 1, 0)}
    # 1,000 REST requests and 1,000 points an hour: the Action's first evaluation of a person's
    # PR costs 2 requests and 3 points; on a re-run REST is the budget that lasts longer, so the
    # comment's update is a PATCH: 3 requests (2 charged: the issue object changed with the
    # comment, the runs answer 304) and 2 points.
    action = graphql["action"]
    assert 1000 // max(action["budget_used"], action["points"]) >= 310
    assert action["rerun"] == 3 and action["rerun_charged"] <= 2
