#!/usr/bin/env python3
"""Prints the headline figures of one `make bench` run, each beside its aim.

    scripts/bench-summary.py RESULTS.tsv

RESULTS.tsv is what scripts/run-bench.sh writes: one line per JSON object a benchmark program
printed, "NAME<TAB>JSON". The first table holds the speed figures Strait is measured by (offload
against the provider alone, agent memory, stream bytes, the API server, peerings in numbers, the
tunnel); the second the other benchmarks' figures with their aims. A figure whose benchmark
failed or did not run shows as "not measured". Exits 1 if the file holds no result at all.
"""
import json
import sys


def load(path):
    runs = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            name, _, text = line.rstrip("\n").partition("\t")
            try:
                runs.setdefault(name, []).append(json.loads(text))
            except ValueError:
                print(f"bench-summary: {path}:{number}: not a JSON line, skipped", file=sys.stderr)
    return runs


def fmt(value, unit="", digits=0):
    if value is None or (isinstance(value, (int, float)) and value < 0):
        return "not measured"
    return f"{value:,.{digits}f}{unit}"


class Table:
    def __init__(self, title):
        self.title, self.rows = title, []

    def add(self, figure, value, aim, verdict):
        self.rows.append((figure, value, aim, verdict))

    def check(self, figure, value, aim_text, ok, unit="", digits=0):
        """ok(value) -> bool; value None or negative is 'not measured'."""
        measured = value is not None and not (isinstance(value, (int, float)) and value < 0)
        verdict = ("met" if ok(value) else "missed") if measured else ""
        self.add(figure, fmt(value, unit, digits), aim_text, verdict)

    def print(self):
        if not self.rows:
            return
        head = ("figure", "measured", "aim", "")
        widths = [max(len(str(r[i])) for r in self.rows + [head]) for i in range(4)]
        print(f"## {self.title}")
        for r in [head] + self.rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
        print()


def first(runs, name, pred=lambda r: True):
    for r in runs.get(name, []):
        if pred(r) and not r.get("failed"):
            return r
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = load(sys.argv[1])
    if not any(k != "run" for k in runs):
        print(f"bench-summary: no benchmark result in {sys.argv[1]}", file=sys.stderr)
        return 1
    run = {k: v for r in runs.get("run", []) for k, v in r.items()}
    print(f"# make bench: commit {run.get('commit', '?')}, {run.get('cores', '?')} cores, "
          f"{run.get('started', '?')} (load {run.get('load_average', '?')}) to "
          f"{run.get('ended', '?')} (load {run.get('load_average_end', '?')})")
    failed = [k for k, v in runs.items() if any(r.get("failed") for r in v)]
    if failed:
        print("# failed: " + ", ".join(failed))
    print()

    t = Table("Speed")
    for r in runs.get("compare", []):
        if "replicas" not in r:
            continue
        n = r["replicas"]
        t.check(f"Deployment of {n:,}: offloaded / direct in the provider "
                f"({fmt(r.get('offloaded_s'), ' s', 1)} / {fmt(r.get('direct_s'), ' s', 1)})",
                r.get("ratio"), "<= 1.5x", lambda v: v <= 1.5, "x", 2)
        t.check(f"Deployment of {n:,}: offloaded Pods/s", r.get("offloaded_pods_per_s"),
                ">= 300", lambda v: v >= 300)
    waves = [r for r in runs.get("offload", []) if "wave" in r]
    big = next((w for w in waves if w.get("pods") == 10000), None)
    if big:
        s = big.get("all_running_s", -1)
        t.check("offload throughput, 10,000 Pods (local create -> Running on both sides)",
                10000 / s if s and s > 0 else None, ">= 300 Pods/s", lambda v: v >= 300, " Pods/s")
    slow = first(runs, "offload-150", lambda r: "wave" in r)
    if slow:
        t.check(f"added latency at 150 Pods/s, p99 out (1,000 Pods, rate reached "
                f"{slow['pods'] / slow['create_s']:.0f}/s)" if slow.get("create_s") else
                "added latency at 150 Pods/s, p99 out", slow.get("out_p99_ms"), "<= 50 ms",
                lambda v: v <= 50, " ms", 1)
        t.check("added latency at 150 Pods/s, p99 back", slow.get("back_p99_ms"), "<= 50 ms",
                lambda v: v <= 50, " ms", 1)
    w1 = next((w for w in waves if w.get("wave") == 1), None)
    if w1:
        reached = w1["pods"] / w1["create_s"] if w1.get("create_s") else 0
        t.add(f"added latency at the 500/s target, 1,000 Pods, p99 out / back (reached "
              f"{reached:.0f}/s)", f"{fmt(w1.get('out_p99_ms'), ' ms')} / "
              f"{fmt(w1.get('back_p99_ms'), ' ms')}", "follows from the two above", "")
    at = {w.get("pods_on_vnode"): w for w in waves}
    if 11000 in at:
        w = at[11000]
        t.check("provider agent peak RSS, 11,000 Pods", w.get("provider_agent_peak_rss_mib"),
                "<= 200 MiB", lambda v: v <= 200, " MiB")
        t.check("consumer agent peak RSS, 11,000 Pods", w.get("agent_peak_rss_mib"),
                "<= 150 MiB", lambda v: v <= 150, " MiB")
    if 11000 in at and 50000 in at:
        for who, key in (("provider", "provider_agent_peak_rss_mib"),
                         ("consumer", "agent_peak_rss_mib")):
            a, b = at[11000].get(key), at[50000].get(key)
            if a and b:
                t.add(f"{who} agent peak RSS, 50,000 Pods", f"{b:,.0f} MiB "
                      f"(+{(b - a) * 1048576 / 39000 / 1024:.1f} KiB per Pod over 11,000)",
                      "grows linearly, small constant", "")
    if w1:
        out, back = w1.get("stream_bytes_out_per_pod"), w1.get("stream_bytes_back_per_pod")
        both = (out or 0) + (back or 0) if out is not None and back is not None else None
        t.check(f"stream bytes per Pod, both ways (out {fmt(out, ' B')}, back "
                f"{fmt(back, ' B')}; 1,000-Pod wave)", both, "<= 3,072 B",
                lambda v: v <= 3072, " B")
    mem = first(runs, "apiserver")
    if mem:
        t.check("API server RSS per stored Pod beyond its JSON (10,000 Pods)",
                mem.get("rss_per_pod_beyond_json_bytes"), "<= 4,096 B", lambda v: v <= 4096, " B")
        t.check("API server writes/s, 8 writers", mem.get("writes_per_second"), ">= 3,000",
                lambda v: v >= 3000)
        t.check(f"API server watch events/s delivered ({mem.get('watchers')} watchers)",
                mem.get("watch_events_per_second"), ">= 60,000", lambda v: v >= 60000)
    t.add("make test from a clean clone", "measured apart: docs/testing.md", "<= 15 min", "")
    out = first(runs, "scale", lambda r: "all_ready_s" in r)
    if out:
        t.check("1 consumer, 20 providers: all virtual nodes Ready", out.get("all_ready_s"),
                "< 60 s", lambda v: v < 60, " s", 1)
        t.check("1 consumer, 20 providers: consumer agent RSS", out.get("consumer_agent_rss_mib"),
                "<= 300 MiB", lambda v: v <= 300, " MiB")
        t.check("1 consumer, 20 providers: consumer agent idle CPU",
                out.get("consumer_agent_idle_cpu_percent"), "<= 5 %", lambda v: v <= 5, " %", 1)
    fan_in = first(runs, "scale", lambda r: "samples_over_budget" in r)
    if fan_in:
        t.check(f"1 provider, 20 consumers: grant samples over the budget (of "
                f"{fan_in.get('grant_samples')})", fan_in.get("samples_over_budget"), "0",
                lambda v: v == 0)
        t.check("1 provider, 20 consumers: provider agent RSS",
                fan_in.get("provider_agent_rss_mib"), "<= 300 MiB", lambda v: v <= 300, " MiB")
        t.check("1 provider, 20 consumers: provider agent idle CPU",
                fan_in.get("provider_agent_idle_cpu_percent"), "<= 5 %", lambda v: v <= 5, " %",
                1)
    tun = first(runs, "tunnel")
    if tun:
        wg, st = tun.get("wireguard_go_gbps_1"), tun.get("strait_gbps_1")
        t.check(f"tunnel, 1 TCP stream: Strait / wireguard-go ({fmt(st, ' Gbit/s', 2)} / "
                f"{fmt(wg, ' Gbit/s', 2)})", st / wg if st and wg else None,
                ">= 2x (no regression)", lambda v: v >= 2, "x", 2)
    t.print()

    o = Table("Other benchmarks")
    dur = first(runs, "apiserver-durable")
    if dur:
        o.check("API server writes/s, durable (fsync'd log)", dur.get("writes_per_second"),
                ">= 2,000", lambda v: v >= 2000)
    sched = first(runs, "scheduler")
    if sched:
        o.check(f"scheduler binds/s ({sched.get('nodes')} nodes, {sched.get('pods')} Pods)",
                sched.get("bound_per_s"), ">= 1,000", lambda v: v >= 1000)
    for r in runs.get("peering", []):
        if r.get("figure") in ("peer_in_band", "peer_pull_in_band"):
            o.check(f"peering, {r['figure'].replace('_', ' ')}, p50 of {r.get('runs')}",
                    r.get("p50_ms"), "< 2,000 ms", lambda v: v < 2000, " ms")
    inf = first(runs, "informer")
    if inf:
        o.check("informer cache, compact: heap / cached JSON", inf.get("compact_heap_to_json_ratio"),
                "<= 2x", lambda v: v <= 2, "x", 2)
    met = first(runs, "metrics")
    if met:
        o.check(f"agent /metrics scrape with {met.get('pods'):,} Pods, median",
                met.get("scrape_median_ms"), "< 10 ms", lambda v: v < 10, " ms", 2)
    svc = first(runs, "service")
    if svc:
        o.check("Service reflection: slice writes per endpoint change, provider",
                svc.get("provider_slice_writes_per_change"), "1", lambda v: v <= 1.0, "", 2)
        o.check("Service reflection: not ready at home -> provider, p99",
                svc.get("not_ready_latency_p99_ms"), "<= 1,000 ms", lambda v: v <= 1000, " ms")
    for name in ("failover", "failover-10s"):
        f = first(runs, name)
        if f:
            g = f"grace {f.get('streamGraceSeconds'):.0f} s, tolerationSeconds " \
                f"{f.get('tolerationSeconds')}"
            aim1, aim2 = f.get("killToNotReadyAimSeconds"), f.get("killToReplacedAimSeconds")
            o.check(f"failover ({g}): agent killed -> virtual node NotReady",
                    f.get("killToNotReadySeconds"), f"<= {aim1:.0f} s",
                    lambda v, a=aim1: v <= a, " s", 1)
            o.check(f"failover ({g}): all replicas Running elsewhere",
                    f.get("killToReplacedSeconds"), f"<= {aim2:.0f} s",
                    lambda v, a=aim2: v <= a, " s", 1)
    ov = first(runs, "override")
    if ov:
        aim = ov.get("ratioAim", 1.1)
        o.check("offload latency with an OffloadingOverride / without, p99", ov.get("ratioP99"),
                f"<= {aim}x", lambda v: v <= aim, "x", 3)
    o.print()
    print(f"Every figure of every program: {sys.argv[1]} (JSON lines).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
