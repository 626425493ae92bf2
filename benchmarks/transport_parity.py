"""Evaluate every PR of the AIDev-pop corpus (6,658 real agent PRs) through both transports,
REST and GraphQL, against the corpus replay, and report how many results differ and why.

    python -m benchmarks.transport_parity [--data DIR] [--limit N] [--workers 4] [--json out.json]

The replay (``python -m taskeval.corpus.replay``) runs in its own process, serving REST and
GraphQL over the same facts (GraphQL needs the source tree's ``tests/fakegraphql.py`` and
graphql-core: the test extra). Each PR is evaluated with the AI judge off, once per transport,
on the same thread one after the other, and the two results are compared: the evidence bundle
byte for byte (its JSON), then every other field of the result but ``evaluatedAt``. A
difference is classed by where it is (the first evidence group whose items differ, or the
result field), so the report says why, with up to five PRs per class. A GraphQL evaluation
that fell back to REST counts as a difference ("fell back to REST"): the comparison would be
REST against REST.

Also reported side by side: the HTTP requests each transport sent per PR (GraphQL queries
included) and the wall time each spent, summed over the PRs (same threads, same server).
Prints a markdown report (the BENCHMARKS.md section) on stdout; exit 1 when any PR differs or
crashes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.real_corpus import replay_process
from taskeval.corpus.aidev import PullRecord, default_data_dir, load
from taskeval.corpus.evaluate import OPTIONS, as_json, client
from taskeval.github.client import Meter
from taskeval.pipeline import evaluate_pull_request
from taskeval.transports import Api

API: tuple[Api, Api] = ("rest", "graphql")


def one(gh: Any, pr: PullRecord, api: Api) -> tuple[dict[str, Any], int, float, int]:
    """(result JSON without ``evaluatedAt``, HTTP requests sent, seconds, GraphQL queries among
    the requests) for one transport."""
    from dataclasses import replace

    meter = Meter()
    t0 = time.perf_counter()
    result = evaluate_pull_request(gh, pr.repository, pr.number, replace(OPTIONS, api=api),
                                   meter=meter).result
    seconds = time.perf_counter() - t0
    data = as_json(result)
    data.pop("evaluatedAt", None)
    return data, meter.requests, seconds, meter.graphql_queries


def why(rest: dict[str, Any], graphql: dict[str, Any]) -> str | None:
    """Where two results differ (None: they do not)."""
    if any(str(w).startswith("GraphQL was") for w in graphql.get("warnings") or []):
        return "fell back to REST"
    if json.dumps(rest["evidence"]).encode() != json.dumps(graphql["evidence"]).encode():
        groups = zip(rest["evidence"]["groups"], graphql["evidence"]["groups"], strict=False)
        for a, b in groups:
            if a != b:
                if a["total"] != b["total"]:
                    return f"bundle: {a['source']} total {a['total']} vs {b['total']}"
                for x, y in zip(a["items"], b["items"], strict=False):
                    if x != y:
                        keys = sorted(k for k in {*x, *y} if x.get(k) != y.get(k))
                        facts = sorted(k for k in {*(x.get("facts") or {}), *(y.get("facts") or {})}
                                       if (x.get("facts") or {}).get(k) != (y.get("facts") or {}).get(k))
                        return f"bundle: {a['source']} item {','.join(keys)}" + (
                            f" ({','.join(facts)})" if facts else "")
        return "bundle: other"
    fields = [k for k in {*rest, *graphql} if rest.get(k) != graphql.get(k)]
    return f"result: {', '.join(sorted(fields))}" if fields else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None, help="only the first N PRs per agent")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None, help="write the summary here")
    args = parser.parse_args(argv)
    data = args.data or default_data_dir()
    corpus = load(data)
    prs = corpus.prs
    if args.limit:
        prs = [p for ps in corpus.by_agent().values() for p in ps[: args.limit]]

    differ: dict[str, list[str]] = defaultdict(list)
    crashes: list[str] = []
    requests: dict[str, list[int]] = {api: [] for api in API}
    # Where each PR's task type came from (the GraphQL result's; the REST one is the same
    # whenever the results are), and the labels that typed it from a linked issue.
    sources: Counter[str] = Counter()
    issue_labels: Counter[str] = Counter()
    seconds: dict[str, float] = dict.fromkeys(API, 0.0)
    # Over GraphQL, per agent: (REST requests, GraphQL queries) of each PR. A Copilot PR reads
    # its timeline over REST (the agent's session events), any other PR GraphQL's.
    by_agent: dict[str, list[tuple[int, int]]] = defaultdict(list)
    lock = threading.Lock()
    local = threading.local()

    with replay_process(data) as url:
        def compare(pr: PullRecord) -> None:
            gh = getattr(local, "gh", None)
            if gh is None:
                gh = local.gh = client(url)
            try:
                got = {api: one(gh, pr, api) for api in API}
            except Exception as exc:
                detail = "".join(traceback.format_exception_only(exc)).strip()
                with lock:
                    crashes.append(f"{pr.agent} {pr.ref}: {detail[:200]}")
                return
            reason = why(got["rest"][0], got["graphql"][0])
            with lock:
                for api in API:
                    requests[api].append(got[api][1])
                    seconds[api] += got[api][2]
                by_agent[pr.agent].append((got["graphql"][1] - got["graphql"][3], got["graphql"][3]))
                if reason:
                    differ[reason].append(f"{pr.agent} {pr.ref}")
                task = got["graphql"][0].get("taskType") or {}
                sources[str(task.get("source"))] += 1
                if task.get("source") == "issue-label":
                    issue_labels.update(task.get("matched") or [])

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
            list(pool.map(compare, prs))
        wall = time.perf_counter() - t0

    compared = len(requests["rest"])
    n_differ = sum(map(len, differ.values()))
    agents = Counter(p.agent for p in prs)
    lines = [
        f"{len(prs)} PRs from `{data.name}` ("
        + ", ".join(f"{a} {n}" for a, n in sorted(agents.items()))
        + f"); replay in a child process, {args.workers} threads, `--no-ai`, each PR through "
        f"REST then GraphQL; {wall:.0f} s wall.",
        "",
        f"- **Results that differ between the transports: {n_differ}** of {compared} compared "
        f"(bundle byte for byte, then every result field but `evaluatedAt`); "
        f"crashes: {len(crashes)}.",
    ]
    for reason, refs in sorted(differ.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  - {len(refs)}: {reason} (e.g. {', '.join(refs[:5])})")
    for crash in crashes[:10]:
        lines.append(f"  - crash: {crash}")
    if compared:
        lines.append(
            "- Task types by source: " + ", ".join(f"{k} {v}" for k, v in sorted(sources.items()))
            + "; the linked issues' labels that typed a PR: "
            + ", ".join(f"{label} {n}" for label, n in issue_labels.most_common(10)) + ".")
    if compared:
        lines += [
            "",
            "| transport | HTTP requests per PR (mean) | min | max | seconds per PR (mean) |",
            "|---|---:|---:|---:|---:|",
        ]
        for api in API:
            lines.append(f"| {api} | {statistics.fmean(requests[api]):.2f} | {min(requests[api])} "
                         f"| {max(requests[api])} | {seconds[api] / compared:.3f} |")
        lines += ["", "Over GraphQL, by agent (a Copilot PR reads its timeline over REST):", "",
                  "| agent | PRs | REST requests per PR (mean) | min | max | GraphQL queries per PR |",
                  "|---|---:|---:|---:|---:|---:|"]
        for agent, seen in sorted(by_agent.items()):
            rest = [r for r, _ in seen]
            lines.append(f"| {agent} | {len(seen)} | {statistics.fmean(rest):.2f} | {min(rest)} | "
                         f"{max(rest)} | {statistics.fmean(q for _, q in seen):.2f} |")
        lines.append("")
        ratio = statistics.fmean(requests["graphql"]) / statistics.fmean(requests["rest"])
        lines.append(f"GraphQL / REST: requests {ratio:.2f}x, time "
                     f"{seconds['graphql'] / seconds['rest']:.2f}x (same threads, same server; the "
                     "replay executes GraphQL in Python, so time says nothing of GitHub's).")
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({
            "prs": len(prs), "compared": compared, "differ": n_differ,
            "reasons": {k: v for k, v in differ.items()}, "crashes": crashes,
            "requests": {api: statistics.fmean(v) if v else None for api, v in requests.items()},
            "seconds": seconds, "wall": wall, "task_type_sources": dict(sources),
            "graphql_by_agent": {a: {"prs": len(v), "rest": statistics.fmean(r for r, _ in v),
                                     "queries": statistics.fmean(q for _, q in v)}
                                 for a, v in by_agent.items()},
            "issue_labels": dict(issue_labels),
        }, indent=2) + "\n")
    return 1 if n_differ or crashes else 0


if __name__ == "__main__":
    sys.exit(main())
