#!/usr/bin/env python3
"""Self-test of the bench/vs-kafka report generator (report.py) on fake `shale perf` results:
figures, ratios, verdicts, the Markdown tables, the periodic-line parser and the plots. Runs in
the unit suite (tests/unit/vskafka); the benchmark itself never runs in CI."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

report.use_python_with_matplotlib()

MIB = 1 << 20
GIB = 1 << 30


def perf_json(rate, record_size, seconds, prod_p99_ms, e2e_p99_ms, groups=1):
    """A perf JSON result (the fields report.py reads) for a steady run."""
    n = rate * seconds
    r = {
        "produceRateTotal": float(rate), "produceThroughputTotalBps": float(rate * record_size),
        "produceCountTotal": float(n), "produceSizeTotalBytes": float(n * record_size),
        "consumeRateTotal": float(rate * groups),
        "consumeThroughputTotalBps": float(rate * groups * record_size),
        "consumeCountTotal": float(n * groups), "consumeSizeTotalBytes": float(n * groups * record_size),
        "timeSecs": [float(i + 1) for i in range(seconds)], "backlog": [0] * seconds,
    }
    for key, p99 in (("produceLatency", prod_p99_ms), ("endToEndLatency", e2e_p99_ms)):
        r[key + "50thTotalMicros"] = p99 * 1000 / 4
        r[key + "99thTotalMicros"] = p99 * 1000
        r[key + "999thTotalMicros"] = p99 * 1000 * 1.5
        r[key + "MaxTotalMicros"] = p99 * 1000 * 2
    return r


def period_line(t, rate, mibs, p99, backlog_k=0.0):
    return ("2026-11-30 01:16:19 - INFO %6.1fs | Prod rate %9.2f msg/s / %6.2f MiB/s | Prod err "
            "     0.00 err/s | Cons rate %9.2f msg/s / %6.2f MiB/s | Backlog: %6.2f K msg | Prod "
            "Latency (ms) avg: %9.3f - 50%%: %9.3f - 99%%: %9.3f - 99.9%%: %9.3f - Max: %9.3f | E2E "
            "Latency (ms) avg: %9.3f - 50%%: %9.3f - 99%%: %9.3f - 99.9%%: %9.3f - Max: %9.3f"
            % (t, rate, mibs, rate, mibs, backlog_k, p99 / 2, p99 / 4, p99, p99 * 1.5, p99 * 2,
               p99 / 2, p99 / 4, p99, p99 * 1.5, p99 * 2))


def periods(n, rate, mibs, p99, phase="test"):
    return [report.parse_period(period_line(i + 1.0, rate, mibs, p99), phase) for i in range(n)]


# Shale produces twice Kafka's rate at a higher p99, with half the CPU per GiB.
KAFKA_FSYNC = {"scenario": "tail-read", "exact": True,
               "result": perf_json(400, 65536, 60, prod_p99_ms=20.0, e2e_p99_ms=30.0),
               "broker": {"cpu_seconds": 30.0, "peak_rss_bytes": 800 * MIB},
               "periods": periods(5, 400, 25.0, 20.0)}
KAFKA = {"scenario": "tail-read", "exact": True,
         "result": perf_json(1000, 65536, 60, prod_p99_ms=5.0, e2e_p99_ms=8.0),
         "broker": {"cpu_seconds": 40.0, "peak_rss_bytes": 900 * MIB},
         "periods": periods(5, 1000, 62.5, 5.0)}
SHALE = {"scenario": "tail-read", "exact": True,
         "result": perf_json(800, 65536, 60, prod_p99_ms=40.0, e2e_p99_ms=30.0),
         "broker": {"cpu_seconds": 30.0, "peak_rss_bytes": 400 * MIB},
         "shale": {"object_puts": 12, "object_gets": 6, "bytes_uploaded": 3 * GIB},
         "periods": periods(5, 800, 50.0, 40.0)}


class Figures(unittest.TestCase):
    def test_throughput_latency_cpu_objects(self):
        f = report.figures(SHALE)
        self.assertAlmostEqual(f["in_msgs"], 800)
        self.assertAlmostEqual(f["in_mibs"], 50.0)
        self.assertAlmostEqual(f["out_mibs"], 50.0)
        self.assertAlmostEqual(f["prod_p99"], 40.0)
        self.assertAlmostEqual(f["prod_p50"], 10.0)
        self.assertAlmostEqual(f["e2e_max"], 60.0)
        moved = 2 * 800 * 60 * 65536 / GIB  # 6000 MiB in + out
        self.assertAlmostEqual(f["cpu_per_gib"], 30.0 / moved)
        self.assertAlmostEqual(f["peak_rss_mib"], 400.0)
        in_gib = 800 * 60 * 65536 / GIB
        self.assertAlmostEqual(f["puts_per_gib"], 12 / in_gib)
        self.assertAlmostEqual(f["gets_per_gib"], 6 / in_gib)
        self.assertAlmostEqual(f["puts_per_gib_up"], 4.0)  # 12 PUTs / 3 GiB uploaded
        self.assertIsNone(report.figures(KAFKA)["puts_per_gib"])

    def test_ratio_and_verdict(self):
        self.assertAlmostEqual(report.ratio(800.0, 400.0), 2.0)
        self.assertIsNone(report.ratio(1.0, 0.0))
        self.assertIsNone(report.ratio(None, 1.0))
        self.assertEqual(report.verdict(2.0, True), "Shale")
        self.assertEqual(report.verdict(2.0, False), "**Kafka**")
        self.assertEqual(report.verdict(0.5, False), "Shale")
        self.assertEqual(report.verdict(1.04, True), "tie")
        self.assertEqual(report.verdict(None, True), "")


class Tables(unittest.TestCase):
    def setUp(self):
        self.runs = {"kafka": KAFKA, "kafka-fsync": KAFKA_FSYNC, "shale": SHALE}
        self.table = report.scenario_table(self.runs)

    def row(self, label):
        for line in self.table.splitlines():
            if line.startswith("| " + label + " "):
                return [c.strip() for c in line.strip("|").split("|")]
        self.fail("no row %r in:\n%s" % (label, self.table))

    def test_header(self):
        head = self.table.splitlines()[0]
        self.assertEqual(head, "| figure | Kafka | Kafka fsync | Shale | Shale / Kafka | "
                               "Shale / Kafka fsync | better at equal durability | "
                               "better than Kafka defaults |")

    def test_throughput_row(self):
        self.assertEqual(self.row("produced (MiB/s)"),
                         ["produced (MiB/s)", "62.5", "25.0", "50.0", "0.80×", "2.00×", "Shale",
                          "**Kafka**"])
        self.assertEqual(self.row("produced (msg/s)")[1:4], ["1,000", "400", "800"])

    def test_kafka_wins_where_it_wins(self):
        self.assertEqual(self.row("produce latency p99 (ms)"),
                         ["produce latency p99 (ms)", "5.00", "20.0", "40.0", "8.00×", "2.00×",
                          "**Kafka**", "**Kafka**"])
        self.assertEqual(self.row("end-to-end latency p99 (ms)")[-2:], ["tie", "**Kafka**"])

    def test_cpu_memory_objects(self):
        self.assertEqual(self.row("broker peak RSS (MiB)")[-2:], ["Shale", "Shale"])
        cpu = self.row("broker CPU per GiB moved (in + out) (CPU s/GiB)")
        # 30 s / 5.86 GiB vs 30 s / 2.93 GiB (fsync) and 40 s / 7.32 GiB (defaults): 0.50, 0.94.
        self.assertEqual(cpu[4:], ["0.94×", "0.50×", "Shale", "Shale"])
        puts = self.row("object PUTs (per GiB produced)")
        self.assertEqual(puts[1:4], ["—", "—", "4.10"])  # 12 PUTs / 2.93 GiB
        self.assertEqual(puts[4:], ["—", "—", "", ""])

    def test_inexact_latencies_are_marked(self):
        quick = dict(SHALE, exact=False)
        t = report.scenario_table({"kafka-fsync": KAFKA_FSYNC, "shale": quick})
        self.assertIn("| produce latency p99 (ms) | 20.0 | ≈40.0 |", t)
        self.assertIn("| produce latency max (ms) | 40.0 | 80.0 |", t)  # max stays exact

    def test_headline_names_kafka_wins(self):
        h = report.headline([("tail-read", "Tail read", self.runs)])
        self.assertIn("produced 50.0 vs 25.0 MiB/s (2.00×)", h)
        self.assertIn("produce p99 40.0 vs 20.0 ms (2.00×)", h)
        self.assertIn("Kafka (fsync) is better on: produce latency p50 (ms), "
                      "produce latency p99 (ms)", h)
        self.assertIn("Kafka (defaults, no fsync) is better on: produced (msg/s), produced "
                      "(MiB/s), consumed (msg/s), consumed (MiB/s), produce latency p50 (ms)", h)

    def test_search_table_and_sustained(self):
        ok = report.sustained(SHALE, 800)
        self.assertEqual(ok[:3], (True, "", 0))
        bad = report.sustained(SHALE, 800, max_p99_ms=30)
        self.assertFalse(bad[0])
        self.assertEqual(bad[1], "p99 40.0 ms > 30")
        short = report.sustained(SHALE, 1000)
        self.assertEqual(short[1], "produced 800 msg/s < 95 % of target")
        runs = {"shale": dict(SHALE, search=[
            {"rate": 800, "sustained": True, "why": "", "record_size": 65536, "produced": 800.0,
             "prod_p99": 40.0, "backlog_end": 0},
            {"rate": 1000, "sustained": False, "why": short[1], "record_size": 65536,
             "produced": 800.0, "prod_p99": 40.0, "backlog_end": 1234}])}
        t = report.search_table(runs)
        self.assertIn("| Shale | 800 (50.0) | 800 | 40.0 | 0 | yes |", t)
        self.assertIn("| Shale | 1,000 (62.5) | 800 | 40.0 | 1,234 | no: produced 800 msg/s < 95 % "
                      "of target |", t)


class Goals(unittest.TestCase):
    def test_goals(self):
        many = dict(SHALE, rate=720, result=perf_json(720, 65536, 60, 30.0, 30.0))
        tail = dict(SHALE, rate=800, search=[{"rate": 800, "sustained": True}])
        c = {"p99_before": 10.0, "p99_during": 12.0, "read_over_produce": 4.0}
        t = report.goals_table({
            "tail-read": {"shale": tail, "kafka-fsync": KAFKA_FSYNC},
            "many-partitions": {"shale": many},
            "catch-up": {"shale": dict(SHALE, catchup=c)}})
        # 2× the throughput but a higher p99 (40 vs 20 ms): not met.
        self.assertIn("| tail read: sustained throughput ≥ 2× Kafka's at a p99 no higher | "
                      "2.00× (p99 40.0 vs 20.0 ms) | **not met** |", t)
        self.assertIn("| 1,280 partitions keep ≥ 90 % of the 16-partition throughput | 720 msg/s "
                      "at 1,280 partitions held; 16 partitions sustained 800 msg/s | met |", t)
        self.assertIn("| catch-up: producers' p99 rises ≤ 10 % | +20 % | **not met** |", t)
        self.assertIn("| catch-up: consumers read ≥ 3× the produce rate | 4.00× | met |", t)
        self.assertIn("| ≤ 1 object PUT per 8 MiB ingested (≤ 128 per GiB uploaded) | worst "
                      "4.00 per GiB (tail-read) | met |", t)
        many_puts = dict(many, shale={"object_puts": 300, "object_gets": 0, "bytes_uploaded": GIB})
        t = report.goals_table({"tail-read": {"shale": tail}, "x": {"shale": many_puts}})
        self.assertIn("| worst 300 per GiB (x) | **not met** |", t)
        self.assertEqual(report.goals_table({}), "")

    def test_many_partitions_goal_verdicts(self):
        def goal(many_rate, many_p99, tail_rate=800):
            many = dict(SHALE, rate=many_rate,
                        result=perf_json(many_rate, 65536, 60, many_p99, many_p99))
            tail = dict(SHALE, rate=tail_rate, search=[{"rate": tail_rate, "sustained": True}])
            t = report.goals_table({"tail-read": {"shale": tail},
                                    "many-partitions": {"shale": many}})
            return t.splitlines()[2].split(" | ")[-1].rstrip(" |")

        self.assertEqual(goal(800, 80.0), "**not met**")  # failed at the 16-partition rate
        self.assertTrue(goal(400, 10.0).startswith("inconclusive"))  # held, but far below
        self.assertTrue(goal(1000, 80.0).startswith("inconclusive"))  # failed above it


class Periods(unittest.TestCase):
    def test_parse_period(self):
        p = report.parse_period(period_line(5.0, 200.0, 0.2, 18.7, backlog_k=1.5), "test")
        self.assertEqual(p["t"], 5.0)
        self.assertEqual(p["prod_rate"], 200.0)
        self.assertEqual(p["prod_p99"], 18.7)
        self.assertEqual(p["backlog_k"], 1.5)
        self.assertEqual(p["e2e_max"], 37.4)
        self.assertIsNone(report.parse_period("2026-11-30 01:17:14 - INFO Summary | Prod", "x"))
        self.assertEqual(report.phase_of_line("... INFO Running test for 1 minutes..."), "test")
        self.assertEqual(report.phase_of_line("... INFO Pausing consumers for 20 seconds"), "backlog")

    def test_result_from_periods(self):
        ps = periods(2, 100.0, 6.25, 10.0) + periods(2, 300.0, 18.75, 30.0)
        r = report.result_from_periods(ps, 65536)
        self.assertAlmostEqual(r["produceRateTotal"], 200.0)
        self.assertAlmostEqual(r["produceSizeTotalBytes"], 800 * 65536)
        self.assertAlmostEqual(r["produceThroughputTotalBps"], 12.5 * MIB)
        # Count-weighted: (2*100*10 + 2*300*30) / 800 = 25 ms.
        self.assertAlmostEqual(r["produceLatency99thTotalMicros"], 25000.0)
        self.assertAlmostEqual(r["produceLatencyMaxTotalMicros"], 60000.0)
        with self.assertRaises(ValueError):
            report.result_from_periods([], 1024)

    def test_catchup_figures(self):
        ps = periods(3, 400.0, 25.0, 10.0, "backlog") + periods(3, 400.0, 25.0, 11.0, "catchup")
        res = perf_json(400, 65536, 10, 11.0, 5000.0, groups=3)
        c = report.catchup_figures(ps, res)
        self.assertAlmostEqual(c["p99_before"], 10.0)
        self.assertAlmostEqual(c["p99_during"], 11.0)
        self.assertAlmostEqual(c["read_over_produce"], 3.0)
        t = report.catchup_table({"shale": dict(SHALE, catchup=c)})
        self.assertIn("| Shale | 10.0 | 11.0 | +10 % | 75.0 | 3.00× |", t)


class Report(unittest.TestCase):
    def test_write_report_with_plots(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "2026-11-30-host.md")
            runs = {"kafka": KAFKA, "kafka-fsync": KAFKA_FSYNC, "shale": SHALE}
            report.write_report(path, {"title": "t", "facts": [("host", "h")], "notes": ["n"]},
                                [("tail-read", "Tail read", runs, "desc")])
            with open(path) as f:
                text = f.read()
            self.assertIn("## Tail read", text)
            self.assertIn("![Tail read](2026-11-30-host-tail-read.png)", text)
            self.assertIn("flush.messages=1", text)
            self.assertNotIn("Load generator warnings", text)
            warned = {"shale": dict(SHALE, tool_warnings=["test phase: The send loop is 1465 ms "
                                                          "behind the target rate"])}
            report.write_report(path, {"title": "t", "facts": []}, [("x", "X", warned, "")],
                                plots=False)
            with open(path) as f:
                self.assertIn("- Shale: test phase: The send loop is 1465 ms behind", f.read())
            with open(os.path.join(d, "2026-11-30-host-tail-read.png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
