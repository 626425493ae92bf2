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
        code = cost_model.main(["--sizes", "1", "--json"])
    assert code == 0
    costs = {c["adapter"]: c for c in json.loads(out.getvalue())["costs"]}
    assert set(costs) == {"cli", "action", "app"}
    for adapter, cost in costs.items():
        assert cost["budget_used"] == cost["requests"], adapter
        assert cost["collection"] + cost["comment"] == cost["requests"], adapter
        assert cost["rerun"] == cost["requests"] - 1, adapter  # a re-run skips the second listing
        assert cost["judge_status"] == "ok", adapter
    # The bot knows its login; the CLI and the Action ask for theirs (GET /user).
    assert (costs["cli"]["comment"], costs["action"]["comment"], costs["app"]["comment"]) == (4, 4, 3)
    assert costs["cli"]["collection"] == costs["action"]["collection"] == costs["app"]["collection"]
