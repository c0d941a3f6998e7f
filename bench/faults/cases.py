"""The fault harness's workload and cases: fault x setting x client, each with the id
`bench/faults/run --case ID` takes; `short` ones run in the test command (ctest -L faults)."""

# The workload: KEYS keys, each SLIDING_LOG LIMIT 1h (a run is far shorter than the window, so the
# limit allows exactly LIMIT per key over it), each offered RATE_PER_KEY checks a second.
KEYS, LIMIT, RATE_PER_KEY = 20, 50, 25
BUDGET = KEYS * LIMIT
# How long a partition lasts before it heals; a quarter of the clients are on the master's side.
PARTITION_S, MINORITY = 2.0, 0.25


# --- Cases: fault x setting x client. ------------------------------------------------------------

def case(fault, client="remote", failure="closed", wait=0, min_replicas=0, interval="3s",
         shift_ms=0, short=False):
    parts = [fault, client, failure]
    if wait:
        parts.append(f"wait{wait}")
    if min_replicas:
        parts.append(f"minrep{min_replicas}")
    if fault.startswith("rl-"):
        parts.append(f"snap{interval}")
    if shift_ms:
        parts.append(f"{'+' if shift_ms > 0 else '-'}{abs(shift_ms) // 3600000}h")
    return dict(id="/".join(parts), fault=fault, client=client, failure=failure, wait=wait,
                min_replicas=min_replicas, interval=interval, shift_ms=shift_ms, short=short)


DAY_MS = 24 * 3600 * 1000
CASES = [
    case("rl-kill9", interval="3s"),
    case("rl-kill9", interval="100ms", short=True),
    case("rl-kill9", interval="100ms", failure="open"),
    case("rl-kill9", interval="100ms", failure="fallback"),
    case("rl-kill9", client="plain", interval="100ms"),
    case("rl-wall-step", interval="100ms", shift_ms=DAY_MS, short=True),
    case("rl-wall-step", interval="100ms", shift_ms=-DAY_MS),
    case("rl-disk-full", interval="100ms"),
    case("rp-kill9"),
    case("rp-kill9", failure="open"),
    case("rp-kill9", wait=1, short=True),
    case("rp-kill9", client="plain", wait=1),
    case("rp-lagging"),
    case("rp-lagging", wait=1, short=True),
    case("rp-lagging", wait=1, failure="open"),
    case("rp-lagging", wait=1, failure="fallback", short=True),
    case("rp-lagging", min_replicas=1),
    case("rp-partition"),
    case("rp-partition", wait=1, short=True),
    case("rp-partition", wait=1, failure="open"),
    case("rp-partition", min_replicas=1),
    case("cluster-kill9"),
    case("cluster-kill9", wait=1),
    case("cluster-sigstop"),
    case("cluster-sigstop", wait=1),
    case("cluster-sigstop", wait=1, failure="fallback"),
    case("cluster-reshard"),
    case("cluster-reshard", client="remote", failure="open"),
]
