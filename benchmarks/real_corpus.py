"""Evaluate every PR of the AIDev-pop corpus (6,658 real agent PRs) with the AI judge off,
through the REST replay, and report crashes, attribution, score distributions and throughput.

    python -m benchmarks.real_corpus [--data DIR] [--output-dir DIR] [--limit N] [--workers 4]
                                     [--cli-sample 5] [--json summary.json]

The replay (``python -m taskeval.corpus.replay``) runs in its own process, so the server and the
evaluations use both cores; evaluations run in process (``taskeval.corpus.evaluate``: the same
``evaluate_pull_request`` the CLI calls, collection over HTTP) on ``--workers`` threads, which is
far faster than one CLI subprocess per PR. ``--cli-sample N`` also runs the real command
(``taskeval evaluate OWNER/REPO#N --no-ai --output``, ``GITHUB_API_URL`` at the replay) for N PRs
and checks that it gives the same scores as the in-process path.

``--output-dir DIR`` writes each result as ``DIR/<agent folder>/<owner>__<repo>__<number>.json``
(what ``taskeval validate`` reads). The folder is the attribution label: precision and recall per
agent compare it with ``result["agent"]["id"]``; results without attribution report "n/a".
Prints a markdown report (the BENCHMARKS.md section) on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from taskeval import SCORER_VERSION, contract
from taskeval.corpus.aidev import AGENT_FOLDERS, FOLDER_AGENT, PullRecord, default_data_dir, load
from taskeval.corpus.evaluate import agent_id, as_json, client, evaluate, is_partial

# Text-detector signals: how many PRs each flags, per agent (read the reasons to judge them).
FLAGGED = ("agent.text_hygiene", "process.template_filled")
SHORT = {"agentPerformance": "agent", "taskOutcomeQuality": "outcome",
         "processCompliance": "process", "overall": "overall"}


@contextmanager
def replay_process(data: Path) -> Iterator[str]:
    """The replay in a child process on an ephemeral port; yields its API root."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskeval.corpus.replay", "--data", str(data), "--port", "0"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "GITHUB_API_URL=" not in line:
            raise RuntimeError(f"the replay did not start: {line!r}")
        yield line.split("GITHUB_API_URL=", 1)[1].rstrip(")\n ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def quartiles(values: list[int]) -> tuple[float, float, float, float]:
    if not values:
        return (float("nan"),) * 4
    if len(values) == 1:
        return (values[0],) * 4  # type: ignore[return-value]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return statistics.fmean(values), q1, q2, q3


def scores_of(result: dict[str, Any]) -> dict[str, tuple[int, str]]:
    out = {c["category"]: (c["finalScore"], c["band"]) for c in result["categoryScores"]}
    out["overall"] = (result["overallScore"], result["overallBand"])
    return out


def run_cli(url: str, prs: list[PullRecord], expected: dict[int, dict[str, Any]]) -> list[str]:
    """The real command for a few PRs; returns disagreements (empty when all match)."""
    problems = []
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "OPENAI_", "TASKEVAL_"))}
    env["GITHUB_API_URL"] = url
    with tempfile.TemporaryDirectory() as tmp:
        for pr in prs:
            out = Path(tmp) / f"{pr.file_stem}.json"
            done = subprocess.run(
                [sys.executable, "-m", "taskeval", "evaluate", pr.ref, "--no-ai", "--output",
                 str(out)], env=env, capture_output=True, text=True, timeout=300,
            )
            if done.returncode != 0:
                problems.append(f"{pr.ref}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
                continue
            got = scores_of(json.loads(out.read_text()))
            want = scores_of(expected[pr.id]) if pr.id in expected else None
            if want is not None and got != want:
                problems.append(f"{pr.ref}: CLI {got} != in-process {want}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--output-dir", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None, help="only the first N PRs per agent")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--cli-sample", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="write the summary here")
    args = parser.parse_args(argv)
    data = args.data or default_data_dir()
    t0 = time.perf_counter()
    corpus = load(data)
    load_s = time.perf_counter() - t0
    prs = corpus.prs
    if args.limit:
        prs = [p for ps in corpus.by_agent().values() for p in ps[: args.limit]]

    results: dict[int, dict[str, Any]] = {}
    crashes: list[tuple[PullRecord, str]] = []
    lock = threading.Lock()
    local = threading.local()

    with replay_process(data) as url:
        def one(pr: PullRecord) -> None:
            gh = getattr(local, "gh", None)
            if gh is None:
                gh = local.gh = client(url)
            try:
                result = evaluate(gh, pr)
            except Exception as exc:
                detail = "".join(traceback.format_exception_only(exc)).strip()
                with lock:
                    crashes.append((pr, detail))
                return
            if args.output_dir:
                target = args.output_dir / pr.agent / f"{pr.file_stem}.json"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(result.to_json(), encoding="utf-8")
            data_ = as_json(result)
            # Keep only what the report needs: 6,658 full results would hold gigabytes.
            slim = {k: data_[k] for k in ("categoryScores", "overallScore", "overallBand",
                                          "warnings", "evidence")}
            slim["evidence"] = {"groups": [g for g in data_["evidence"]["groups"]
                                           if g["source"] == "runAudit"]}
            if "agent" in data_:
                slim["agent"] = data_["agent"]
            slim["flags"] = {s["id"]: s["reason"] for s in data_["signals"]
                             if s["id"] in FLAGGED and s["score"] is not None and s["score"] < 100}
            with lock:
                results[pr.id] = slim

        t1 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
            list(pool.map(one, prs))
        eval_s = time.perf_counter() - t1
        by_agent = defaultdict(list)
        for p in prs:
            by_agent[p.agent].append(p)
        cli_prs = [by_agent[a][i] for i in range(args.cli_sample) for a in AGENT_FOLDERS
                   if i < len(by_agent[a])][: args.cli_sample]
        t2 = time.perf_counter()
        cli_problems = run_cli(url, cli_prs, results) if cli_prs else []
        cli_s = time.perf_counter() - t2

    # ------------------------------------------------------------------------------ report
    label = {p.id: p.agent for p in prs}
    attributed = {i: agent_id(r) for i, r in results.items()}
    has_attribution = any(v is not None for v in attributed.values())
    partial = sum(1 for r in results.values() if is_partial(r))
    lines = [
        f"Scorer {SCORER_VERSION}; {len(prs)} PRs from `{data.name}` "
        f"(loaded in {load_s:.1f} s); replay in a child process, {args.workers} evaluation "
        f"threads, `--no-ai`.",
        "",
        f"- **Crashes: {len(crashes)}** of {len(prs)} "
        f"({len(results)} evaluated; {partial} say their evidence is partial).",
        f"- **Throughput: {len(results) / eval_s:.1f} evaluations/s** "
        f"({eval_s:.0f} s for {len(prs)} PRs, collection over HTTP included).",
        f"- Real CLI (`taskeval evaluate … --no-ai`, subprocess) on {len(cli_prs)} PRs: "
        + ("same scores as the in-process path" if not cli_problems
           else f"{len(cli_problems)} disagreement(s)")
        + (f", {cli_s / max(1, len(cli_prs)):.1f} s per PR." if cli_prs else "."),
    ]
    for pr, detail in crashes[:10]:
        lines.append(f"  - crash: {pr.agent} {pr.ref}: {detail[:200]}")
    for problem in cli_problems[:10]:
        lines.append(f"  - CLI: {problem}")
    lines += ["", "Attribution (the folder is the label; precision over the PRs attributed to the "
              "agent, recall over the folder's PRs):", "",
              "| agent | PRs | attributed to it | correct | precision | recall | "
              "the folder's PRs were attributed to |", "|---|---:|---:|---:|---:|---:|---|"]
    summary_attr: dict[str, Any] = {}
    ids_of = {folder: [i for i in results if label[i] == folder] for folder in AGENT_FOLDERS}
    for folder in AGENT_FOLDERS:
        want = FOLDER_AGENT[folder]
        mine = ids_of[folder]
        if not has_attribution:
            lines.append(f"| {want} | {len(mine)} | n/a | n/a | n/a | n/a | n/a |")
            continue
        predicted = [i for i in results if attributed[i] == want]
        correct = [i for i in predicted if label[i] == folder]
        precision = len(correct) / len(predicted) if predicted else float("nan")
        recall = len(correct) / len(mine) if mine else float("nan")
        spread = Counter(str(attributed[i]) for i in mine)
        lines.append(f"| {want} | {len(mine)} | {len(predicted)} | {len(correct)} | "
                     f"{precision:.1%} | {recall:.1%} | "
                     + ", ".join(f"{k} {v}" for k, v in spread.most_common(4)) + " |")
        summary_attr[want] = {"prs": len(mine), "attributed": len(predicted),
                              "correct": len(correct), "precision": precision, "recall": recall,
                              "spread": dict(spread)}
    lines += ["", "Scores per agent (final = deterministic with `--no-ai`): mean and quartiles "
              "(Q1 / median / Q3), and how many PRs fall in each band "
              "(failing / weak / acceptable / strong / excellent):", "",
              "| agent | PRs | category | mean | Q1 | median | Q3 | bands f/w/a/s/e |",
              "|---|---:|---|---:|---:|---:|---:|---|"]
    summary_scores: dict[str, Any] = {}
    for folder in AGENT_FOLDERS:
        theirs = [results[i] for i in ids_of[folder]]
        if not theirs:
            continue
        for category in (*contract.CATEGORIES, "overall"):
            values = [scores_of(r)[category][0] for r in theirs]
            bands = Counter(scores_of(r)[category][1] for r in theirs)
            mean, q1, q2, q3 = quartiles(values)
            lines.append(f"| {FOLDER_AGENT[folder]} | {len(theirs)} | {SHORT[category]} | "
                         f"{mean:.1f} | {q1:g} | {q2:g} | {q3:g} | "
                         + "/".join(str(bands[b]) for b in contract.BAND_NAMES) + " |")
            summary_scores.setdefault(folder, {})[category] = {
                "mean": mean, "q1": q1, "median": q2, "q3": q3,
                "bands": {b: bands[b] for b in contract.BAND_NAMES}}
    lines += ["", "PRs the text detectors flag (signal score below 100), per agent:", "",
              "| agent | PRs | " + " | ".join(f"`{f}`" for f in FLAGGED) + " |",
              "|---|---:|" + "---:|" * len(FLAGGED)]
    for folder in AGENT_FOLDERS:
        flagged = [results[i]["flags"] for i in ids_of[folder]]
        if flagged:
            lines.append(f"| {FOLDER_AGENT[folder]} | {len(flagged)} | " + " | ".join(
                str(sum(1 for r in flagged if f in r)) for f in FLAGGED) + " |")
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({
            "prs": len(prs), "evaluated": len(results), "crashes": [
                {"pr": p.ref, "agent": p.agent, "error": d} for p, d in crashes],
            "partial": partial, "seconds": eval_s, "per_second": len(results) / eval_s,
            "cli": {"prs": len(cli_prs), "problems": cli_problems},
            "attribution": summary_attr if has_attribution else None,
            "scores": summary_scores,
            "flagged": {p.ref: results[p.id]["flags"] for p in prs
                        if p.id in results and results[p.id]["flags"]},
        }, indent=2) + "\n")
    return 1 if crashes or cli_problems else 0


if __name__ == "__main__":
    sys.exit(main())
