#!/usr/bin/env python3
"""Builds the protocol fuzz seed corpora from the captured client bytes in tests/testdata.

  corpus/fuzz_protocol_request/   request frames as captured (header + body)
  corpus/fuzz_protocol_response/  int16 api key, int16 version, response body
  corpus/fuzz_record_batch/       the records field of each captured Produce request
Re-run after refreshing tests/testdata; output is deterministic.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "testdata")
KEYS = {"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "ApiVersions": 18}


def write(sub, name, data):
    d = os.path.join(HERE, "corpus", sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as fh:
        fh.write(data)


def produce_records(frame):
    """Yields the records fields of a Produce request frame (v3+; flexible from v9)."""
    sys.path.insert(0, os.path.join(DATA, "capture"))
    from capture import Dec  # the capture script's independent decoder

    key, ver = struct.unpack(">hh", frame[:4])
    flex = ver >= 9
    d = Dec(frame, False)
    d.p = 8
    d.string()  # client id: always a classic string
    d.flex = flex
    d.tags()
    d.string()  # transactional id
    d.i16()
    d.i32()
    for _ in range(d.count()):
        d.string()
        for _ in range(d.count()):
            d.i32()
            rec = d.bytes_()
            d.tags()
            if rec:
                yield rec
        d.tags()


def main():
    req_dir = os.path.join(DATA, "kafka-requests")
    for fn in sorted(os.listdir(req_dir)):
        with open(os.path.join(req_dir, fn), "rb") as fh:
            frame = fh.read()
        write("fuzz_protocol_request", fn, frame)
        if "-Produce-v" in fn:
            for i, rec in enumerate(produce_records(frame)):
                write("fuzz_record_batch", "{}-{}".format(fn, i), rec)
    resp_dir = os.path.join(DATA, "kafka-responses")
    for fn in sorted(os.listdir(resp_dir)):
        api, rest = fn.split("-v", 1)
        ver = int(rest.split("-")[0])
        with open(os.path.join(resp_dir, fn), "rb") as fh:
            body = fh.read()
        write("fuzz_protocol_response", fn, struct.pack(">hh", KEYS[api], ver) + body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
