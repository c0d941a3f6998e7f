"""The fault harness's tables: each case in words, the markdown rows docs/guarantees.md and
bench/RESULTS.md show, and bench/RESULTS.md's section (bench/run keeps it when it rewrites the
rest of that file)."""

import os
import subprocess
import time

from cases import CASES, KEYS, LIMIT, PARTITION_S, RATE_PER_KEY

FAULT_TEXT = {
    "rl-kill9": "rl-server `kill -9` between snapshots, restarted",
    "rl-wall-step": "rl-server's wall clock steps {shift} while it runs; restarted on the right "
                    "one",
    "rl-disk-full": "rl-server's disk full: saves fail, checks go on; then `kill -9`, restarted",
    "rp-kill9": "master `kill -9`, replica promoted",
    "rp-lagging": "replica cut off (stopped); master `kill -9`; the stale replica promoted",
    "rp-partition": f"master cut off with 1/4 of the clients for {PARTITION_S:.0f} s; replica "
                    "promoted",
    "cluster-kill9": "3 + 3 cluster: a master `kill -9`, its replica promoted",
    "cluster-sigstop": "3 + 3 cluster: a master `SIGSTOP` past node timeout, then resumed",
    "cluster-reshard": "3 + 3 cluster: all of a master's slots resharded to another under traffic",
}


def describe(c):
    """(fault, setting, client) in words, for the tables."""
    fault = FAULT_TEXT[c["fault"]].format(
        shift=f"{'+' if c['shift_ms'] > 0 else '-'}{abs(c['shift_ms']) // 3600000} h")
    if c["fault"].startswith("rl-"):
        setting = f"`--snapshot-interval {c['interval']}`"
    elif c["wait"]:
        setting = f"`wait_for_replicas = {c['wait']}`"
    elif c["min_replicas"]:
        setting = f"`min-replicas-to-write {c['min_replicas']}` (max lag 1 s)"
    else:
        setting = "asynchronous"
    client = {"remote": "RemoteLimiter", "plain": "plain RESP"}[c["client"]]
    mode = {"open": "fail-open", "closed": "fail-closed",
            "fallback": "fallback (4 instances)"}[c["failure"]]
    return fault, setting, f"{client}, {mode}"


def table_rows(results):
    by_id = {c["id"]: c for c in CASES}
    rows = ["| command | fault | setting | client | worst key | all keys | without an answer "
            "(ms, worst key) | wrong denials | bound |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        fault, setting, client = describe(by_id[r["id"]])
        bound = f"≤ {r['bound']:.2f}" if r.get("bound") is not None else "—"
        rows.append(f"| `bench/faults/run --case {r['id']}` | {fault} | {setting} | {client} | "
                    f"{r['worst']:.2f} | {r['total']:.2f} | {r['unavailable_ms']} | "
                    f"{r['wrong_denied']} | {bound} |")
    return rows


BEGIN, END = "<!-- bench/faults/run: begin -->", "<!-- bench/faults/run: end -->"


def write_results(root, results, runs, elapsed_s):
    """Replaces the fault section of bench/RESULTS.md (bench/run keeps it when it rewrites the
    rest)."""
    path = os.path.join(root, "bench", "RESULTS.md")
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    block = [BEGIN, "## What a fault costs (bench/faults/run)", "",
             f"- **Date:** {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, rl {commit}, "
             f"{runs} runs per case{f', {elapsed_s:.0f} s' if elapsed_s else ''}; "
             "`bench/faults/run` (each row alone: its command)",
             f"- **Load:** {KEYS} keys, each `SLIDING_LOG {LIMIT} 1h` (over a run the limit allows "
             f"exactly {LIMIT} per key), {RATE_PER_KEY} checks/s per key from 4 threads "
             "(`rl_fault_load`); the fault comes once half the keys' budget is admitted; a run "
             "ends when every key is back at its limit and answered",
             "- **Columns:** admissions as a multiple of the limit (the worst key, and all keys "
             "together; worst of the runs), the longest total time one key went without the "
             "server's answer, checks denied while their key had admitted less than its limit, "
             "and the bound docs/guarantees.md states (checked: a run above it fails)", ""]
    block += table_rows(results) + ["", END]
    text = open(path).read() if os.path.exists(path) else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + "\n".join(block) + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(block) + "\n"
    with open(path, "w") as f:
        f.write(text)
