#!/usr/bin/python3
"""Turns side_by_side.sh's JSON lines (stdin) into its section of bench/RESULTS.md: writes
bench/results/sections/frameworks-python-node.md (bench/run keeps the files of that folder when it
rewrites RESULTS.md) and puts the section into RESULTS.md between its markers, now.

    report.py RESULTS.md SECTION.md "<command>" "<workers>" "<seconds>" "<limits>"
"""
import json
import os
import subprocess
import sys
import time

NAME = "frameworks-python-node"
BEGIN, END = f"<!-- section {NAME} -->", f"<!-- end section {NAME} -->"


def version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return "?"


def main():
    results_md, section_md, command, workers, seconds, limits = sys.argv[1:7]
    rows = [json.loads(line) for line in sys.stdin if line.strip()]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    py = version(["/usr/bin/python3", "-c", "import flask_limiter, limits, redis; print("
                  "f'Flask-Limiter {flask_limiter.__version__}, limits {limits.__version__}, "
                  "redis-py {redis.__version__}')"])
    L = [BEGIN, "## Framework adapters side by side: Flask-Limiter and express-rate-limit", "",
         f"- **Date:** {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; **command:** "
         f"`{command}`",
         f"- **Load:** {workers} worker processes per row, each a Flask app (through Flask's "
         f"test client) or an Express app (over HTTP, 4 requests in flight), for {seconds} s; "
         f"{limits}; one row at a time. Load average after the run: {load} on "
         f"{os.cpu_count()} cores shared with other builds, so decisions/s are the load "
         "generators' (Python and Node in the same 2 cores) more than the servers'; the commands "
         "per decision are exact.",
         f"- **Versions:** {py}; Node {version(['node', '--version'])}, express-rate-limit 8.7.5, "
         "rate-limit-redis 6.0.1, ioredis 6.0.0; "
         f"{version(['redis-server', '--version']).split(' sha')[0]}",
         "- **Columns:** decisions/s = requests answered (200 or 429) per second over all "
         "workers; beyond the limit = requests admitted past a key's limit, summed over keys "
         "(0 means exact); commands/decision = the commands the adapter sent over the run, "
         "counted in the client (redis-py's `execute_command`, the stores' `sendCommand`; a "
         "script's `EVALSHA` is one), divided by the requests: the round trips a decision cost.",
         "- Flask-Limiter's Redis rows run with its own headers on (so every row answers with "
         "rate-limit headers): its moving window sends the `acquire` script, then the script "
         "that reads the window back for the headers; its fixed window an `INCR` script, then "
         "`GET` and `TTL`. The rl rows with rl's strategies make one `RL.CHECK ... HEADERS` each; "
         "with `limits`' own strategies over the rl storage, one `RL.CHECK` plus the `RL.PEEK`s "
         "Flask-Limiter's headers ask for.", "",
         "| adapter / storage | server | keys | decisions/s | admitted | beyond the limit | "
         "commands/decision |",
         "|---|---|---|--:|--:|--:|--:|"]
    for r in rows:
        label, _, server = r["label"].rpartition(", ") if r["label"].endswith(
            ("rl-server", "Redis+rl.so")) else (r["label"], "", "Redis (Lua)")
        keys = "1 (hot)" if r["scenario"] == "hot" else f"{r['keys_seen']} seen"
        L.append(f"| {label} | {server} | {keys} | {r['decisions_per_s']} | {r['admitted']} | "
                 f"{r['beyond_limit']} | {r['commands_per_decision']:.2f} |")
    L += ["", END]
    text = "\n".join(L) + "\n"
    os.makedirs(os.path.dirname(section_md), exist_ok=True)
    with open(section_md, "w") as f:
        f.write(text)
    with open(results_md) as f:
        current = f.read()
    if BEGIN in current and END in current:
        before, rest = current.split(BEGIN, 1)
        current = before + text.rstrip("\n") + rest.split(END, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + text
    with open(results_md, "w") as f:
        f.write(current)
    print(text)


if __name__ == "__main__":
    main()
