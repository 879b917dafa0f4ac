"""kcat (Debian's kcat, librdkafka) as a compatibility-matrix client program.

Translates the driver's sub-commands (README.md) into kcat runs:
  create   kcat has no admin mode: delegated to the librdkafka C++ client (--rdkafka-bin).
  produce  one `kcat -P` per codec, records on stdin as key<TAB>value. kcat's -H headers are
           fixed per run, so records carry only the `codec` header, and kcat reports no offsets
           (the driver knows both limits: PRODUCER_LIMITS in driver.py).
  consume  `kcat -G` (balanced consumer, auto-commit, commit on revoke and on close) with -J JSON
           output; its "% Group ... rebalanced ... assigned:/revoked:" stderr lines become
           assigned/revoked events. SIGTERM is passed on; kcat then closes the consumer cleanly.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import records  # noqa: E402

REBALANCE = re.compile(r"rebalanced \(.*\): (assigned|revoked): (.*)$")
PART = re.compile(r"\[(\d+)\]")


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def produce(args):
    codecs = args.codecs.split(",")
    n = len(codecs)
    for ci, codec in enumerate(codecs):
        lo = args.first + (ci * args.count + n - 1) // n
        hi = args.first + ((ci + 1) * args.count + n - 1) // n
        data = "".join("%s\t%s\n" % (records.key(i), records.value(i)) for i in range(lo, hi))
        cmd = ["kcat", "-P", "-b", args.bootstrap, "-t", args.topic, "-K", "\t", "-H", "codec=" + codec]
        cmd += ["-X", "enable.idempotence=true", "-X", "acks=all", "-X", "compression.codec=" + codec]
        r = subprocess.run(cmd, input=data, text=True, capture_output=True, timeout=120)
        if r.returncode != 0:
            emit({"ev": "error", "error": "kcat -P exited %d: %s" % (r.returncode, r.stderr[-500:])})
            return 1
    emit({"ev": "done"})
    return 0


def consume(args):
    cmd = ["kcat", "-b", args.bootstrap, "-G", args.group, "-J", "-u"]
    cmd += ["-X", "client.id=" + args.member, "-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=10000"]
    cmd += [args.topic]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def forward(signo, _frame):
        # Pass the first one on; ignore repeats (kcat closes cleanly on one).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        proc.send_signal(signo)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    emit({"ev": "started"})  # from here on SIGTERM reaches kcat, which closes cleanly

    def read_stderr():
        for line in proc.stderr:
            m = REBALANCE.search(line.strip())
            if m:
                emit({"ev": m.group(1), "parts": sorted(int(p) for p in PART.findall(m.group(2)))})
            else:
                sys.stderr.write(line)

    t = threading.Thread(target=read_stderr, daemon=True)
    t.start()
    for line in proc.stdout:
        m = json.loads(line)
        h = m.get("headers") or []
        emit(
            {
                "ev": "rec",
                "p": m["partition"],
                "o": m["offset"],
                "k": m.get("key"),
                "vh": records.value_hash(m.get("payload") or ""),
                "h": [[h[j], h[j + 1]] for j in range(0, len(h), 2)],
            }
        )
    rc = proc.wait()
    t.join(timeout=10)
    if rc == 0:
        emit({"ev": "closed"})
    return rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdkafka-bin", required=True)
    ap.add_argument("command", choices=["create", "produce", "consume"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--codecs", default=",".join(records.CODECS))
    ap.add_argument("--group", default="")
    ap.add_argument("--member", default="")
    args = ap.parse_args()
    if args.command == "create":
        cmd = [args.rdkafka_bin, "create", "--bootstrap", args.bootstrap, "--topic", args.topic]
        return subprocess.run(cmd + ["--partitions", str(args.partitions)]).returncode
    if args.command == "produce":
        return produce(args)
    return consume(args)


if __name__ == "__main__":
    sys.exit(main())
