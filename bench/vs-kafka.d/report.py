"""The report side of bench/vs-kafka: parse `shale perf` output, turn one run per system and
scenario into figures, and write the Markdown report with its PNG plots.

Pure functions on plain dicts, so that report_test.py can feed it fake perf results. A *run* is

    {"scenario": str, "system": "kafka" | "kafka-fsync" | "shale",
     "result": <perf JSON dict (exact) or the same keys rebuilt from the periodic lines>,
     "exact": bool,                   # False when the aggregates come from periodic lines
     "periods": [<period dict>...],   # every periodic line of the run, with its phase
     "broker": {"cpu_seconds": float, "peak_rss_bytes": int or None} or None,
     "shale": {"object_puts": int, "object_gets": int, "bytes_uploaded": int,
               "object_get_bytes": int, "object_read_bytes": int (newer brokers)} or None,
     "search": [{"rate": int, "sustained": bool, "why": str, ...}] (tail read only)}
"""
import os
import re
import sys

SYSTEMS = ["kafka", "kafka-fsync", "shale"]
SYSTEM_LABELS = {
    "kafka": "Kafka (defaults: ack before fsync)",
    "kafka-fsync": "Kafka (flush.messages=1: fsync before ack)",
    "shale": "Shale (ack after WAL fsync)",
}
SHORT = {"kafka": "Kafka", "kafka-fsync": "Kafka fsync", "shale": "Shale"}
GIB = float(1 << 30)
MIB = float(1 << 20)

# --- parsing `shale perf` stdout -------------------------------------------------------------

_NUM = r"\s*(-?[\d.]+(?:E-?\d+)?)"
PERIOD_RE = re.compile(
    r"(\d+\.\d)s \| Prod rate%s msg/s /%s MiB/s \| Prod err%s err/s \| "
    r"Cons rate%s msg/s /%s MiB/s \| Backlog:%s K msg \| "
    r"Prod Latency \(ms\) avg:%s - 50%%:%s - 99%%:%s - 99\.9%%:%s - Max:%s \| "
    r"E2E Latency \(ms\) avg:%s - 50%%:%s - 99%%:%s - 99\.9%%:%s - Max:%s\s*$" % ((_NUM,) * 16))
PERIOD_FIELDS = ["prod_rate", "prod_mibs", "prod_err", "cons_rate", "cons_mibs", "backlog_k",
                 "prod_avg", "prod_p50", "prod_p99", "prod_p999", "prod_max",
                 "e2e_avg", "e2e_p50", "e2e_p99", "e2e_p999", "e2e_max"]

# Log lines that start a phase (runner.cc); periods after them belong to that phase.
PHASES = [
    ("Warming up for", "warmup"),
    ("Pausing consumers for", "backlog"),
    ("Running catch-up test", "catchup"),
    ("Running test for", "test"),
]


def phase_of_line(line):
    for needle, phase in PHASES:
        if needle in line:
            return phase
    return None


def parse_period(line, phase, interval_s=1.0):
    """A periodic statistics line as a dict (latencies in ms, rates in msg/s and MiB/s), or
    None for any other line."""
    m = PERIOD_RE.search(line)
    if not m:
        return None
    d = {"t": float(m.group(1)), "phase": phase, "interval_s": interval_s}
    for i, k in enumerate(PERIOD_FIELDS):
        d[k] = float(m.group(i + 2))
    return d


def weighted(values, weights):
    tw = sum(weights)
    if tw <= 0:
        return sum(values) / len(values) if values else 0.0
    return sum(v * w for v, w in zip(values, weights)) / tw


def result_from_periods(periods, record_size):
    """The aggregate keys of a perf JSON result rebuilt from periodic lines (quick mode, whose
    phases are shorter than the tool's one-minute unit). Rates and byte counts are exact sums;
    the latency percentiles are count-weighted means of the per-period percentiles and the max
    is the maximum, so they are approximations (the report marks them with ≈)."""
    if not periods:
        raise ValueError("no periodic lines in the measured phase")
    dur = sum(p["interval_s"] for p in periods)
    pc = [p["prod_rate"] * p["interval_s"] for p in periods]
    cc = [p["cons_rate"] * p["interval_s"] for p in periods]
    r = {
        "produceRateTotal": sum(pc) / dur,
        "produceThroughputTotalBps": sum(p["prod_mibs"] * p["interval_s"] for p in periods) * MIB / dur,
        "produceCountTotal": sum(pc),
        "produceSizeTotalBytes": sum(pc) * record_size,
        "consumeRateTotal": sum(cc) / dur,
        "consumeThroughputTotalBps": sum(p["cons_mibs"] * p["interval_s"] for p in periods) * MIB / dur,
        "consumeCountTotal": sum(cc),
        "consumeSizeTotalBytes": sum(cc) * record_size,
    }
    for side, w, key in (("prod", pc, "produceLatency"), ("e2e", cc, "endToEndLatency")):
        for pct, name in (("p50", "50th"), ("p99", "99th"), ("p999", "999th")):
            r["%s%sTotalMicros" % (key, name)] = 1000.0 * weighted(
                [p["%s_%s" % (side, pct)] for p in periods], w)
        r["%sMaxTotalMicros" % key] = 1000.0 * max(p["%s_max" % side] for p in periods)
    r["timeSecs"] = [p["t"] for p in periods]
    r["backlog"] = [int(p["backlog_k"] * 1000) for p in periods]
    return r


# --- figures ---------------------------------------------------------------------------------

# (key, label, unit, higher_is_better)
FIGURES = [
    ("in_msgs", "produced", "msg/s", True),
    ("in_mibs", "produced", "MiB/s", True),
    ("out_msgs", "consumed", "msg/s", True),
    ("out_mibs", "consumed", "MiB/s", True),
    ("prod_p50", "produce latency p50", "ms", False),
    ("prod_p99", "produce latency p99", "ms", False),
    ("prod_p999", "produce latency p99.9", "ms", False),
    ("prod_max", "produce latency max", "ms", False),
    ("e2e_p50", "end-to-end latency p50", "ms", False),
    ("e2e_p99", "end-to-end latency p99", "ms", False),
    ("e2e_p999", "end-to-end latency p99.9", "ms", False),
    ("e2e_max", "end-to-end latency max", "ms", False),
    ("cpu_per_gib", "broker CPU per GiB moved (in + out)", "CPU s/GiB", False),
    ("peak_rss_mib", "broker peak RSS", "MiB", False),
    ("puts_per_gib", "object PUTs", "per GiB produced", False),
    ("puts_per_gib_up", "object PUTs", "per GiB uploaded", False),
    ("gets_per_gib", "object GETs", "per GiB consumed", False),
    ("gets_per_gib_obj", "object GETs", "per GiB read from objects", False),
    ("fetched_per_read", "object bytes fetched", "per byte read from objects", False),
]
LATENCY_KEYS = {"prod_p50", "prod_p99", "prod_p999", "prod_max", "e2e_p50", "e2e_p99",
                "e2e_p999", "e2e_max"}
APPROX_KEYS = {"prod_p50", "prod_p99", "prod_p999", "e2e_p50", "e2e_p99", "e2e_p999"}


def figures(run):
    """Every figure of one run, as {key: float or None}."""
    r = run["result"]
    f = {
        "in_msgs": r["produceRateTotal"],
        "in_mibs": r["produceThroughputTotalBps"] / MIB,
        "out_msgs": r["consumeRateTotal"],
        "out_mibs": r["consumeThroughputTotalBps"] / MIB,
    }
    for side, key in (("prod", "produceLatency"), ("e2e", "endToEndLatency")):
        for pct, name in (("p50", "50th"), ("p99", "99th"), ("p999", "999th"), ("max", "Max")):
            v = r.get("%s%sTotalMicros" % (key, name))
            f["%s_%s" % (side, pct)] = None if v is None else v / 1000.0
    if f["out_msgs"] == 0:  # no consumer: no end-to-end sample
        for pct in ("p50", "p99", "p999", "max"):
            f["e2e_" + pct] = None
    in_gib = r["produceSizeTotalBytes"] / GIB
    out_gib = r["consumeSizeTotalBytes"] / GIB
    moved = in_gib + out_gib
    b = run.get("broker") or {}
    f["cpu_per_gib"] = b["cpu_seconds"] / moved if b.get("cpu_seconds") is not None and moved > 0 else None
    f["peak_rss_mib"] = b["peak_rss_bytes"] / MIB if b.get("peak_rss_bytes") else None
    s = run.get("shale")
    f["puts_per_gib"] = s["object_puts"] / in_gib if s and in_gib > 0 else None
    f["gets_per_gib"] = s["object_gets"] / out_gib if s and out_gib > 0 else None
    up_gib = s["bytes_uploaded"] / GIB if s and s.get("bytes_uploaded") else 0
    f["puts_per_gib_up"] = s["object_puts"] / up_gib if up_gib > 0 else None
    # Issue #13's measure: GETs per GiB the broker served from objects (not from the LogCache),
    # from counters a broker before them did not have.
    obj_gib = s["object_read_bytes"] / GIB if s and s.get("object_read_bytes") else 0
    f["gets_per_gib_obj"] = s["object_gets"] / obj_gib if obj_gib > 0 else None
    f["fetched_per_read"] = (s["object_get_bytes"] / (obj_gib * GIB)
                             if obj_gib > 0 and s.get("object_get_bytes") is not None else None)
    return f


def sustained(run, rate, max_p99_ms=50.0):
    """Whether a tail-read step held (issue #6): produce p99 <= 50 ms, >= 95 % of the target
    rate produced, and less than 2 seconds' worth of messages in the backlog at the end.
    Returns (held, why not, backlog at end, figures)."""
    f = figures(run)
    backlog = run["result"].get("backlog") or [0]
    why = []
    if f["prod_p99"] is None or f["prod_p99"] > max_p99_ms:
        why.append("p99 %s ms > %g" % (fmt(f["prod_p99"], "ms"), max_p99_ms))
    if f["in_msgs"] < 0.95 * rate:
        why.append("produced %.0f msg/s < 95 %% of target" % f["in_msgs"])
    if backlog[-1] > 2 * rate:
        why.append("backlog %d msgs" % backlog[-1])
    return not why, "; ".join(why), backlog[-1], f


def fmt(v, unit):
    if v is None:
        return "—"
    if unit in ("msg/s",):
        return "{:,.0f}".format(v)
    a = abs(v)
    if a >= 1000:
        return "{:,.0f}".format(v)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    return "%.2f" % v


def ratio(shale, kafka):
    """Shale/Kafka, or None when either side is missing or Kafka's figure is zero."""
    if shale is None or kafka is None or kafka == 0:
        return None
    return shale / kafka


def verdict(r, higher_is_better):
    """Who is better by this figure: within ±5 % counts as a tie (run-to-run noise)."""
    if r is None:
        return ""
    if 0.95 <= r <= 1.05:
        return "tie"
    better = r > 1 if higher_is_better else r < 1
    return "Shale" if better else "**Kafka**"


def fmt_ratio(r):
    if r is None:
        return "—"
    return "%.2f×" % r


def scenario_table(runs_by_system):
    """The Markdown table of one scenario: a row per figure, a column per system, then the
    Shale/Kafka ratios against both Kafka configurations and who wins at equal durability."""
    figs = {s: figures(r) for s, r in runs_by_system.items()}
    inexact = {s for s, r in runs_by_system.items() if not r.get("exact", True)}
    present = [s for s in SYSTEMS if s in figs]
    head = ["figure"] + [SHORT[s] for s in present]
    ratios = []
    if "shale" in figs:
        for k in ("kafka", "kafka-fsync"):
            if k in figs:
                ratios.append(k)
                head.append("Shale / %s" % SHORT[k])
    if "shale" in figs and "kafka-fsync" in figs:
        head.append("better at equal durability")
    if "shale" in figs and "kafka" in figs:
        head.append("better than Kafka defaults")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for key, label, unit, hib in FIGURES:
        vals = {s: figs[s][key] for s in present}
        if all(v is None for v in vals.values()):
            continue
        cells = ["%s (%s)" % (label, unit)]
        for s in present:
            txt = fmt(vals[s], unit)
            if s in inexact and key in APPROX_KEYS and vals[s] is not None:
                txt = "≈" + txt
            cells.append(txt)
        for k in ratios:
            cells.append(fmt_ratio(ratio(vals["shale"], vals[k])))
        if "shale" in figs and "kafka-fsync" in figs:
            cells.append(verdict(ratio(vals["shale"], vals["kafka-fsync"]), hib))
        if "shale" in figs and "kafka" in figs:
            cells.append(verdict(ratio(vals["shale"], vals["kafka"]), hib))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def search_table(runs_by_system):
    """The tail-read step search: every rate tried, per system, and whether it held."""
    rows = ["| system | target msg/s (MiB/s) | produced msg/s | produce p99 (ms) | backlog at end (msg) | sustained |",
            "| --- | --- | --- | --- | --- | --- |"]
    for s in SYSTEMS:
        run = runs_by_system.get(s)
        if not run:
            continue
        for step in run.get("search", []):
            rows.append("| %s | %s (%.1f) | %s | %s | %s | %s |" % (
                SHORT[s], "{:,}".format(step["rate"]), step["rate"] * step["record_size"] / MIB,
                fmt(step.get("produced"), "msg/s"), fmt(step.get("prod_p99"), "ms"),
                "{:,}".format(step.get("backlog_end", 0)),
                "yes" if step["sustained"] else "no: " + step["why"]))
    return "\n".join(rows)


def catchup_table(runs_by_system):
    """Catch-up: producers' p99 before (backlog phase) vs during catch-up, and the consumers'
    read rate against the produce rate."""
    rows = ["| system | produce p99 before (ms) | produce p99 during (ms) | change | catch-up read MiB/s | read / produce rate |",
            "| --- | --- | --- | --- | --- | --- |"]
    for s in SYSTEMS:
        run = runs_by_system.get(s)
        if not run or "catchup" not in run:
            continue
        c = run["catchup"]
        change = None
        if c.get("p99_before") and c.get("p99_during") is not None:
            change = (c["p99_during"] / c["p99_before"] - 1.0) * 100.0
        rows.append("| %s | %s | %s | %s | %s | %s |" % (
            SHORT[s], fmt(c.get("p99_before"), "ms"), fmt(c.get("p99_during"), "ms"),
            "—" if change is None else "%+.0f %%" % change, fmt(c.get("read_mibs"), "MiB/s"),
            fmt_ratio(c.get("read_over_produce"))))
    return "\n".join(rows)


def catchup_figures(periods, result):
    """Before/during p99 use the same method (count-weighted mean of per-period p99) on the
    backlog phase and on the catch-up phase, so that the change is like for like."""
    def p99(phase):
        ps = [p for p in periods if p["phase"] == phase and p["prod_rate"] > 0]
        if not ps:
            return None
        return weighted([p["prod_p99"] for p in ps], [p["prod_rate"] for p in ps])

    prod = result["produceThroughputTotalBps"]
    read = result["consumeThroughputTotalBps"]
    return {"p99_before": p99("backlog"), "p99_during": p99("catchup"), "read_mibs": read / MIB,
            "read_over_produce": read / prod if prod > 0 else None}


# --- plots -----------------------------------------------------------------------------------

COLORS = {"kafka": "#1f77b4", "kafka-fsync": "#ff7f0e", "shale": "#2ca02c"}


def plot_scenario(runs_by_system, title, path):
    """One PNG, two panels side by side: throughput (produced solid, consumed dashed) and
    produce p99 over time, a line per system. Time 0 is the start of the first plotted phase."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    for s in SYSTEMS:
        run = runs_by_system.get(s)
        if not run or not run.get("periods"):
            continue
        ps = [p for p in run["periods"] if p["phase"] != "warmup"] or run["periods"]
        t, x = [], 0.0
        for p in ps:
            x += p["interval_s"]
            t.append(x)
        a.plot(t, [p["prod_mibs"] for p in ps], color=COLORS[s], label=SHORT[s] + " in")
        a.plot(t, [p["cons_mibs"] for p in ps], color=COLORS[s], linestyle="--", label=SHORT[s] + " out")
        b.plot(t, [p["prod_p99"] for p in ps], color=COLORS[s], label=SHORT[s] + " produce p99")
    fig.suptitle(title)
    a.set_title("throughput (solid: produced, dashed: consumed)", fontsize=10)
    a.set_xlabel("seconds")
    a.set_ylabel("MiB/s")
    a.legend(fontsize=7)
    a.grid(alpha=0.3)
    b.set_title("produce latency p99 per second", fontsize=10)
    b.set_xlabel("seconds")
    b.set_ylabel("ms")
    b.set_yscale("log")
    b.legend(fontsize=7)
    b.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# --- the report ------------------------------------------------------------------------------

def headline(scen_runs):
    """One line per scenario with the throughput and p99 ratios at equal durability."""
    out = []
    for name, title, runs in scen_runs:
        if "shale" not in runs or "kafka-fsync" not in runs:
            continue
        s, k = figures(runs["shale"]), figures(runs["kafka-fsync"])
        kd = figures(runs["kafka"]) if "kafka" in runs else None
        txt = "- **%s**: produced %s vs %s MiB/s (%s), produce p99 %s vs %s ms (%s)" % (
            title, fmt(s["in_mibs"], "MiB/s"), fmt(k["in_mibs"], "MiB/s"),
            fmt_ratio(ratio(s["in_mibs"], k["in_mibs"])), fmt(s["prod_p99"], "ms"),
            fmt(k["prod_p99"], "ms"), fmt_ratio(ratio(s["prod_p99"], k["prod_p99"])))
        if s["cpu_per_gib"] is not None and k["cpu_per_gib"] is not None:
            txt += ", CPU per GiB %s" % fmt_ratio(ratio(s["cpu_per_gib"], k["cpu_per_gib"]))
        if kd is not None:
            txt += "; against Kafka without fsync: produced %s, p99 %s" % (
                fmt_ratio(ratio(s["in_mibs"], kd["in_mibs"])),
                fmt_ratio(ratio(s["prod_p99"], kd["prod_p99"])))
        for who, kf in (("Kafka (fsync)", k), ("Kafka (defaults, no fsync)", kd)):
            if kf is None:
                continue
            losses = ["%s (%s)" % (label, unit) for key, label, unit, hib in FIGURES
                      if verdict(ratio(s[key], kf[key]), hib) == "**Kafka**"]
            if losses:
                txt += ". %s is better on: %s" % (who, ", ".join(losses))
        out.append(txt + ".")
    return "\n".join(out)


def goals_table(by_name):
    """Issue #6's goals, measured on Shale's rows against Kafka with fsync (equal durability).
    by_name: {scenario name: {system: run}}. Goals whose runs are missing are left out."""
    rows = []

    def fig(scen, system):
        run = by_name.get(scen, {}).get(system)
        return figures(run) if run else None

    def met(ok):
        return "met" if ok else "**not met**"

    s, k = fig("tail-read", "shale"), fig("tail-read", "kafka-fsync")
    if s and k:
        r = ratio(s["in_mibs"], k["in_mibs"])
        ok = r is not None and r >= 2 and s["prod_p99"] is not None and k["prod_p99"] is not None \
            and s["prod_p99"] <= k["prod_p99"]
        rows.append(("tail read: sustained throughput ≥ 2× Kafka's at a p99 no higher",
                     "%s (p99 %s vs %s ms)" % (fmt_ratio(r), fmt(s["prod_p99"], "ms"),
                                               fmt(k["prod_p99"], "ms")), met(ok)))
    t_run = by_name.get("tail-read", {}).get("shale")
    m_run = by_name.get("many-partitions", {}).get("shale")
    if t_run and m_run and t_run.get("rate") and m_run.get("rate"):
        # Many-partitions runs at one fixed rate, so the goal can only be judged when that rate
        # is near the 16-partition sustained rate.
        t_rate, m_rate = t_run["rate"], m_run["rate"]
        t_ok = any(st["sustained"] and st["rate"] == t_rate for st in t_run.get("search", []))
        m_ok, why, _, _ = sustained(m_run, m_rate)
        val = "%s msg/s at 1,280 partitions %s; 16 partitions sustained %s" % (
            "{:,}".format(m_rate), "held" if m_ok else "did not hold (%s)" % why,
            "{:,} msg/s".format(t_rate) if t_ok else "none of the rates tried")
        if m_ok and t_ok and m_rate >= 0.9 * t_rate:
            verdict_txt = "met"
        elif not m_ok and t_ok and m_rate <= t_rate:
            verdict_txt = "**not met**"
        else:
            verdict_txt = "inconclusive (the fixed rate is not within 90–100 % of the " \
                          "16-partition sustained rate)"
        rows.append(("1,280 partitions keep ≥ 90 % of the 16-partition throughput", val,
                     verdict_txt))
    c = by_name.get("catch-up", {}).get("shale", {}).get("catchup")
    if c:
        if c.get("p99_before") and c.get("p99_during") is not None:
            rise = c["p99_during"] / c["p99_before"] - 1.0
            rows.append(("catch-up: producers' p99 rises ≤ 10 %", "%+.0f %%" % (100 * rise),
                         met(rise <= 0.10)))
        if c.get("read_over_produce") is not None:
            rows.append(("catch-up: consumers read ≥ 3× the produce rate",
                         fmt_ratio(c["read_over_produce"]), met(c["read_over_produce"] >= 3)))
    cu = by_name.get("catch-up", {}).get("shale")
    g = figures(cu)["gets_per_gib_obj"] if cu else None
    if g is not None:
        # 1 GET per 4 MiB = 256 GETs per GiB, counted by the broker's own metrics.
        rows.append(("catch-up: ≤ 1 object GET per 4 MiB read from objects (≤ 256 per GiB)",
                     "%s per GiB" % fmt(g, "1/GiB"), met(g <= 256)))
    # Per GiB uploaded, not produced: uploads are by size or every 60 s, so a short phase's
    # PUTs need not belong to the bytes produced in it.
    puts = [(n, figures(r["shale"])["puts_per_gib_up"]) for n, r in by_name.items()
            if "shale" in r]
    puts = [(n, v) for n, v in puts if v is not None]
    if puts:
        worst = max(puts, key=lambda x: x[1])
        # 1 PUT per 8 MiB = 128 PUTs per GiB.
        rows.append(("≤ 1 object PUT per 8 MiB ingested (≤ 128 per GiB uploaded)",
                     "worst %s per GiB (%s)" % (fmt(worst[1], "1/GiB"), worst[0]),
                     met(worst[1] <= 128)))
    if not rows:
        return ""
    out = ["| goal | Shale | |", "| --- | --- | --- |"]
    out += ["| %s | %s | %s |" % r for r in rows]
    return "\n".join(out)


def write_report(path, meta, scen_runs, plots=True):
    """scen_runs: [(scenario name, title, {system: run}, description)]. Writes the Markdown file
    at `path` and one PNG per scenario next to it (<stem>-<scenario>.png)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    d = os.path.dirname(os.path.abspath(path))
    lines = ["# Shale vs Apache Kafka — %s" % meta["title"], ""]
    lines += ["| | |", "| --- | --- |"]
    for k, v in meta["facts"]:
        lines.append("| %s | %s |" % (k, v))
    lines += ["", "## Durability", "",
              "Shale acknowledges a produce only after its WAL write is durable (fdatasync). "
              "Kafka is measured twice: with its defaults (acknowledged once in the page cache, "
              "**no fsync before ack**) and with the topic config `flush.messages=1` (fsync "
              "before ack). Compare Shale with the `Kafka fsync` column for equal durability; the "
              "`Kafka` column shows what Kafka gains by not syncing.", ""]
    if meta.get("notes"):
        lines += ["## Notes", ""] + ["- " + n for n in meta["notes"]] + [""]
    lines += ["## Headline (Shale vs Kafka with fsync before ack)", "",
              headline([(n, t, r) for n, t, r, _ in scen_runs]) or "(no scenario ran on both)", ""]
    goals = goals_table({n: r for n, _, r, _ in scen_runs})
    if goals:
        lines += ["## Issue #6 goals", "", goals, ""]
    for name, title, runs, desc in scen_runs:
        lines += ["## %s" % title, "", desc, ""]
        if name == "tail-read":
            lines += ["Step search (the row below is each system's highest sustained rate, or "
                      "its lowest rate tried when none held):", "", search_table(runs), ""]
        lines += [scenario_table(runs), ""]
        warns = ["%s: %s" % (SHORT[sys_], w) for sys_ in SYSTEMS if sys_ in runs
                 for w in runs[sys_].get("tool_warnings", [])]
        if warns:
            lines += ["Load generator warnings (its send loop fell behind the target rate: the "
                      "broker pushed back, or the tool lacked CPU):", ""] + \
                ["- " + w for w in warns] + [""]
        if name == "catch-up":
            lines += [catchup_table(runs), ""]
        if plots:
            png = "%s-%s.png" % (stem, name)
            plot_scenario(runs, title, os.path.join(d, png))
            lines += ["![%s](%s)" % (title, png), ""]
    lines += ["## How to read this", "",
              "- Ratios are Shale / Kafka; above 1 is better for throughput, below 1 is better "
              "for latency, CPU and memory. The last column names the winner at equal "
              "durability (within ±5 % counts as a tie), the next one against Kafka's defaults; "
              "**Kafka** in bold marks a figure where Kafka wins.",
              "- CPU seconds per GiB: utime + stime of the broker process (the JVM, or `shale "
              "serve`) over the measured phase, divided by the GiB produced plus consumed in it.",
              "- Peak RSS: `VmHWM` of the broker process, reset at the start of each scenario "
              "(`/proc/<pid>/clear_refs`).",
              "- Object PUTs/GETs: deltas of Shale's `--metrics-file` counters over the measured "
              "phase, per GiB produced, uploaded or consumed in it (uploads happen by size or "
              "every `s3.wal.upload.interval.ms`, so per GiB produced is noisy in short phases; "
              "per GiB uploaded is not).",
              "- ≈ marks latency percentiles rebuilt from the per-second lines (quick mode): "
              "count-weighted means of per-second percentiles, not exact histogram percentiles.",
              ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def use_python_with_matplotlib():
    """Debian's python3-matplotlib belongs to /usr/bin/python3; when `python3` on PATH is
    another interpreter (pyenv, a venv) without matplotlib, re-run this script with Debian's."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    deb = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(deb) and os.path.exists(deb):
        os.execv(deb, [deb] + sys.argv)
    sys.exit("matplotlib is missing: install Debian's python3-matplotlib (scripts/setup --test)")
