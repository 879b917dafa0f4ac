#!/usr/bin/env python3
"""Loads `shale perf` / AutoMQ perf result files (perf-*.json) as OpenMessaging-Benchmark-style
results and plots them, like OMB's bin/create_charts.py: one chart per metric, one line per file.

Both layouts are accepted: the AutoMQ/shale layout (latencies in microseconds, `produceRate`,
`endToEndLatency99thMicros`, ...) is converted to OMB's TestResult fields (milliseconds,
`publishRate`, `endToEndLatency99pct`, ...); OMB result files are read as they are.

Charts are written as standalone SVG with the standard library only; PNGs as well when
matplotlib is installed.

  tools/perf/plot_results.py perf-2025-01-01-12-15-42.json [more.json ...] --out charts/
  tools/perf/plot_results.py perf-....json --omb-json omb.json   # also write the OMB form
"""
import argparse
import json
import math
import os
import sys

PCTS = [("50", "50th"), ("75", "75th"), ("95", "95th"), ("99", "99th"), ("999", "999th"),
        ("9999", "9999th")]


def to_omb(d, name="shale-perf"):
    """Converts an AutoMQ/shale result dict to OMB TestResult fields (latencies in ms)."""
    if "publishRate" in d:
        return d
    cfg = d.get("config", {})
    ms = lambda v: v / 1000.0  # noqa: E731
    r = {
        "workload": name,
        "driver": "shale-perf",
        "messageSize": cfg.get("recordSize"),
        "topics": cfg.get("topics"),
        "partitions": cfg.get("partitionsPerTopic"),
        "producersPerTopic": cfg.get("producersPerTopic"),
        "consumersPerTopic": cfg.get("consumersPerGroup"),
        "timeSecs": list(d["timeSecs"]),
        "publishRate": list(d["produceRate"]),
        "publishErrorRate": list(d["errorRate"]),
        "consumeRate": list(d["consumeRate"]),
        "backlog": list(d["backlog"]),
    }
    for omb, src in (("publishLatency", "produceLatency"), ("endToEndLatency", "endToEndLatency")):
        r[omb + "Avg"] = [ms(v) for v in d[src + "MeanMicros"]]
        for o, a in PCTS:
            r["%s%spct" % (omb, o)] = [ms(v) for v in d["%s%sMicros" % (src, a)]]
        r[omb + "Max"] = [ms(v) for v in d[src + "MaxMicros"]]
        agg = "aggregatedPublishLatency" if omb == "publishLatency" else "aggregatedEndToEndLatency"
        r[agg + "Avg"] = ms(d[src + "MeanTotalMicros"])
        for o, a in PCTS:
            r["%s%spct" % (agg, o)] = ms(d["%s%sTotalMicros" % (src, a)])
        r[agg + "Max"] = ms(d[src + "MaxTotalMicros"])
        r[agg + "Quantiles"] = {float(k): ms(v) for k, v in d[src + "QuantilesMicros"].items()}
    return r


def load(path):
    with open(path) as f:
        return to_omb(json.load(f), os.path.splitext(os.path.basename(path))[0])


COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]


def svg_chart(title, ylabel, series, xlabel="time (s)", logx=False):
    """series: list of (name, xs, ys). Returns an SVG document."""
    W, H, L, R, T, B = 900, 360, 70, 200, 34, 48
    pw, ph = W - L - R, H - T - B
    xs_all = [x for _, xs, _ in series for x in xs] or [1]
    ys_all = [y for _, _, ys in series for y in ys if y is not None and math.isfinite(y)] or [1]
    fx = (lambda v: math.log10(max(v, 1e-9))) if logx else (lambda v: v)
    xmin, xmax = min(map(fx, xs_all)), max(map(fx, xs_all))
    if xmax <= xmin:
        xmax = xmin + 1
    ymax = max(ys_all) or 1
    p = 10 ** math.floor(math.log10(ymax)) if ymax > 0 else 1
    ymax = next(m * p for m in (1, 2, 5, 10) if m * p >= ymax)
    sx = lambda v: L + (fx(v) - xmin) / (xmax - xmin) * pw  # noqa: E731
    sy = lambda v: T + ph - v / ymax * ph  # noqa: E731
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="20" font-size="15" font-weight="bold">%s</text>' % (L, title)]
    for i in range(6):
        yv = ymax * i / 5
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, L + pw, sy(yv), sy(yv)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (L - 6, sy(yv) + 4, round(yv, 3)))
        xv = xmin + (xmax - xmin) * i / 5
        # Quantile charts: x = 100 / (100 - p) on a log scale, labelled as the percentile p.
        label = ("%g%%" % round(100 - 100 / 10 ** xv, 3)) if logx else "%g" % round(xv, 3)
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (L + pw * i / 5, T + ph + 18, label))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>' % (L, T, pw, ph))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % (L + pw / 2, H - 8, xlabel))
    o.append('<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">%s</text>' % (T + ph / 2, ylabel))
    for i, (name, xs, ys) in enumerate(series):
        c = COLORS[i % len(COLORS)]
        pts = " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in zip(xs, ys)
                       if y is not None and math.isfinite(y))
        o.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (c, pts))
        ly = T + 10 + 18 * i
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (L + pw + 10, L + pw + 30, ly, ly, c))
        o.append('<text x="%d" y="%d">%s</text>' % (L + pw + 36, ly + 4, name))
    o.append("</svg>")
    return "\n".join(o) + "\n"


CHARTS = [
    ("publish-rate", "Publish rate", "msg/s", "publishRate"),
    ("consume-rate", "Consume rate", "msg/s", "consumeRate"),
    ("backlog", "Backlog", "messages", "backlog"),
    ("publish-latency-p99", "Publish latency p99", "ms", "publishLatency99pct"),
    ("e2e-latency-p99", "End-to-end latency p99", "ms", "endToEndLatency99pct"),
]


def plot(results, out_dir):
    """results: list of (name, omb dict). Returns the written file paths."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    specs = []
    for fname, title, ylabel, key in CHARTS:
        series = []
        for name, r in results:
            xs = r.get("timeSecs") or [10.0 * (i + 1) for i in range(len(r[key]))]  # OMB: 10 s
            series.append((name, xs, r[key]))
        specs.append((fname, title, ylabel, series, "time (s)", False))
    for kind, agg in (("publish", "aggregatedPublishLatencyQuantiles"),
                      ("e2e", "aggregatedEndToEndLatencyQuantiles")):
        series = []
        for name, r in results:
            q = sorted((float(k), v) for k, v in r.get(agg, {}).items() if float(k) < 100)
            # OMB's quantile chart: x = 100 / (100 - percentile), log scale.
            series.append((name, [100.0 / (100.0 - k) for k, _ in q], [v for _, v in q]))
        specs.append(("%s-latency-quantiles" % kind, "%s latency quantiles" % kind.capitalize(),
                      "ms", series, "percentile", True))
    for fname, title, ylabel, series, xlabel, logx in specs:
        path = os.path.join(out_dir, fname + ".svg")
        with open(path, "w") as f:
            f.write(svg_chart(title, ylabel, series, xlabel, logx))
        written.append(path)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written
    for fname, title, ylabel, series, xlabel, logx in specs:
        fig, ax = plt.subplots(figsize=(9, 4))
        for name, xs, ys in series:
            ax.plot(xs, ys, label=name)
        if logx:
            ax.set_xscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend()
        path = os.path.join(out_dir, fname + ".png")
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="result JSON files (shale/AutoMQ or OMB layout)")
    ap.add_argument("--out", default="charts", help="output directory for the charts")
    ap.add_argument("--omb-json", help="also write the first file converted to OMB's layout")
    args = ap.parse_args(argv)
    results = [(os.path.splitext(os.path.basename(p))[0], load(p)) for p in args.files]
    if args.omb_json:
        with open(args.omb_json, "w") as f:
            json.dump(results[0][1], f, indent=2)
    for path in plot(results, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
