#!/usr/bin/env python3
"""Self-test of driver.py's invariant checks, no broker needed: a correct synthetic run passes,
and each kind of fault a broker or client could introduce is reported."""

import argparse
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402
import records  # noqa: E402

N = 100


class FakeMember:
    def __init__(self, name):
        self.name = name
        self.parts = set()
        self.closed = False


def good_run(client="confluent"):
    """A run in which record i went to partition i % 6 at offset i // 6, consumed once."""
    args = argparse.Namespace(client=client, records=N, rdkafka_bin="/bin/true", kill=False)
    run = driver.Run(args, broker=None, workdir="/nonexistent")
    events = []
    for i in range(N):
        first, count = run.batch_of(i)
        codec = records.codec_of(i, first, count, records.CODECS)
        run.acks[i] = (i % 6, i // 6)
        hdrs = [list(h) for h in records.headers(i, codec)]
        if not run.limits.get("idx_header", True):
            hdrs = [h for h in hdrs if h[0] != "idx"]
        events.append(
            {"ev": "rec", "p": i % 6, "o": i // 6, "k": records.key(i), "vh": records.value_hash(records.value(i)), "h": hdrs}
        )
    return run, events


def feed(run, events, member="a"):
    m = FakeMember(member)
    for ev in events:
        run.on_event(m, ev)
    run.check()
    return run.problems


class CheckTest(unittest.TestCase):
    def test_clean_run_passes(self):
        run, evs = good_run()
        self.assertEqual(feed(run, evs), [])

    def test_clean_kcat_run_passes(self):
        run, evs = good_run("kcat")
        run.acks.clear()
        self.assertEqual(feed(run, evs), [])

    def test_duplicate_is_reported(self):
        run, evs = good_run()
        self.assertTrue(any("consumed 2 times" in p for p in feed(run, evs + [evs[7]])))

    def test_missing_is_reported(self):
        run, evs = good_run()
        self.assertTrue(any("record 7 consumed 0 times" in p for p in feed(run, evs[:7] + evs[8:])))

    def test_wrong_key_is_reported(self):
        run, evs = good_run()
        evs[3]["k"] = "key-999"
        self.assertTrue(any("record 3: key" in p for p in feed(run, evs)))

    def test_wrong_headers_are_reported(self):
        run, evs = good_run()
        evs[4]["h"] = evs[4]["h"][::-1]
        self.assertTrue(any("record 4: headers" in p for p in feed(run, evs)))

    def test_unknown_value_is_reported(self):
        run, evs = good_run()
        evs[5]["vh"] = records.value_hash("corrupted")
        self.assertTrue(any("unexpected record" in p for p in feed(run, evs)))

    def test_wrong_offset_is_reported(self):
        run, evs = good_run()
        run.acks[9] = (9 % 6, 1000)
        self.assertTrue(any("record 9 consumed at" in p for p in feed(run, evs)))

    def test_out_of_order_is_reported(self):
        run, evs = good_run()
        evs[0], evs[6] = evs[6], evs[0]  # both in partition 0
        self.assertTrue(any("out of order" in p for p in feed(run, evs)))


if __name__ == "__main__":
    unittest.main()
