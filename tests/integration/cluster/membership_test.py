#!/usr/bin/env python3
"""Cluster membership against real processes: a real etcd (Debian's etcd-server) and three
`shale serve` on loopback ports sharing one object directory, each with its own WAL.

Cases:
  membership  the three register under their leases (listeners, WAL, node epoch 1) and elect
              exactly one controller; kill -9 of the controller moves the controller within the
              lease TTL and drops its record; its restart registers with node epoch 2; a clean
              stop (SIGTERM) leaves the live set at once; a broker with another cluster id, or
              another object store, refuses to start; a second process with a live broker's id
              is refused before it opens its storage, and the live broker keeps serving
  local_script  scripts/cluster start brings up etcd and three brokers that register and elect
              a controller; a broker serves a produce and a consume; scripts/cluster stop stops
              them all and the brokers leave the live set

Usage: membership_test.py <case>   (SHALE_BIN names the binary)
"""
import base64
import json
import os
import signal
import socket
import types
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from etcd_test import SHALE, Broker, Etcd, STORAGE, consume, produce  # noqa: E402

CLUSTER_ID = "itcluster1"
TTL_MS = 3000


def etcd_range(etcd, prefix):
    """{key: (json value, lease)} for every key under prefix, through etcd's JSON gateway."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    body = json.dumps({"key": base64.b64encode(prefix.encode()).decode(),
                       "range_end": base64.b64encode(end.encode()).decode()}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/v3/kv/range" % etcd.client, data=body)
    with urllib.request.urlopen(req, timeout=5) as r:
        kvs = json.loads(r.read()).get("kvs", [])
    out = {}
    for kv in kvs:
        key = base64.b64decode(kv["key"]).decode()
        out[key] = (json.loads(base64.b64decode(kv.get("value", "")).decode() or "null"),
                    int(kv.get("lease", "0")))
    return out


def brokers(etcd):
    return {v["id"]: v for k, (v, _) in etcd_range(etcd, "it/shale/brokers/").items()}


def controller(etcd):
    kv = etcd_range(etcd, "it/shale/controller")
    v = kv.get("it/shale/controller")
    return v[0]["id"] if v else None


def wait(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def start(tmp, etcd, node, objects, extra=()):
    data = os.path.join(tmp, "b%d" % node)
    os.makedirs(data, exist_ok=True)
    return Broker(data, etcd, ["node.id=%d" % node, "cluster.id=" + CLUSTER_ID,
                               "s3.data.buckets=0@file://" + objects,
                               "broker.session.timeout.ms=%d" % TTL_MS] + list(extra))


def refused(tmp, etcd, node, objects, cluster_id):
    data = os.path.join(tmp, "bad%d" % node)
    args = [SHALE, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", "data.dir=" + data,
            "--override", "metadata.store=etcd://127.0.0.1:%d/it/" % etcd.client,
            "--override", "node.id=%d" % node, "--override", "cluster.id=" + cluster_id,
            "--override", "s3.data.buckets=0@file://" + objects]
    for o in STORAGE:
        args += ["--override", o]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0, "a mismatched broker started:\n" + r.stdout + r.stderr
    return r.stderr


def case_membership(tmp):
    etcd = Etcd(tmp)
    objects = os.path.join(tmp, "objects")
    os.makedirs(objects)
    bs = {}
    try:
        for n in (1, 2, 3):
            bs[n] = start(tmp, etcd, n, objects)
        live = wait(lambda: len(brokers(etcd)) == 3 and brokers(etcd), 10, "three brokers")
        for n in (1, 2, 3):
            rec = live[n]
            assert rec["listeners"] == {"PLAINTEXT": bs[n].bootstrap}, rec
            assert rec["node_epoch"] == 1, rec
            assert rec["wal"].endswith("/b%d/wal" % n), rec
        # Every record is leased, each on its own lease.
        leases = {lease for k, (_, lease) in etcd_range(etcd, "it/shale/brokers/").items()}
        assert len(leases) == 3 and 0 not in leases, leases
        assert controller(etcd) == 1, controller(etcd)
        print("registered: %s; controller 1" %
              ", ".join("%d@%s" % (n, live[n]["listeners"]["PLAINTEXT"]) for n in (1, 2, 3)))

        # kill -9 of the controller: its lease runs out, another broker takes over.
        t0 = time.time()
        bs[1].stop(signal.SIGKILL)
        new = wait(lambda: controller(etcd) in (2, 3) and controller(etcd), TTL_MS / 1000 + 5,
                   "a new controller")
        assert 1 not in brokers(etcd)
        print("controller %d after kill -9 of 1 in %.1f s" % (new, time.time() - t0))
        bs[1] = start(tmp, etcd, 1, objects)
        rec = wait(lambda: brokers(etcd).get(1), 10, "broker 1 back")
        assert rec["node_epoch"] == 2, rec
        assert controller(etcd) == new, "the controller moved back without cause"

        # A clean stop revokes the lease: the record goes at once.
        t0 = time.time()
        bs[2].stop()
        assert "revoking the metadata lease" not in bs[2].log(), bs[2].log()
        del bs[2]
        wait(lambda: 2 not in brokers(etcd), 2, "broker 2 to leave")
        wait(lambda: controller(etcd) in (1, 3), TTL_MS / 1000 + 5, "a controller")
        print("broker 2 left %.2f s after SIGTERM; controller %d" %
              (time.time() - t0, controller(etcd)))

        err = refused(tmp, etcd, 7, objects, "othercluster")
        assert "cluster identity" in err and "othercluster" in err and CLUSTER_ID in err, err
        err = refused(tmp, etcd, 8, os.path.join(tmp, "other-objects"), CLUSTER_ID)
        assert "s3.data.buckets" in err, err
        assert set(brokers(etcd)) == {1, 3}, brokers(etcd)
        print("mismatched cluster id and object store refused")

        # A second process with broker 3's id waits out the lease, then gives up without having
        # opened the storage engine (which would bump the node's storage epoch and fence 3).
        assert produce(bs[3], "dup", ["before-%d" % i for i in range(50)])
        t0 = time.time()
        err = refused(tmp, etcd, 3, objects, CLUSTER_ID)
        assert "registered by another live process" in err, err
        assert brokers(etcd)[3]["node_epoch"] == 1, brokers(etcd)
        assert produce(bs[3], "dup", ["after-%d" % i for i in range(50)],
                       "-X", "message.timeout.ms=20000"), "broker 3 stopped acknowledging"
        got = consume(bs[3], "dup")
        assert got == ["before-%d" % i for i in range(50)] + ["after-%d" % i for i in range(50)]
        print("duplicate id refused after %.1f s; broker 3 kept serving" % (time.time() - t0))
    finally:
        for b in bs.values():
            if b.proc.poll() is None:
                b.stop()
        etcd.kill()


def port_run(n):
    """A port p with p .. p+n-1 all free (probed by binding)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        socks = []
        try:
            for i in range(n):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise AssertionError("no run of free ports")


def case_local_script(tmp):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    script = os.path.join(root, "scripts", "cluster")
    env = dict(os.environ, SHALE_BIN=os.path.abspath(SHALE),
               SHALE_CLUSTER_OVERRIDES=" ".join(STORAGE))
    d = os.path.join(tmp, "local")
    etcd_port, port = port_run(2), port_run(3)
    try:
        r = subprocess.run([script, "start", d, str(etcd_port), str(port)], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        want = ",".join("127.0.0.1:%d" % (port + i) for i in range(3))
        assert r.stdout.strip() == want, r.stdout
        etcd = types.SimpleNamespace(client=etcd_port)
        wait(lambda: len(etcd_range(etcd, "shale-local/shale/brokers/")) == 3, 10,
             "three brokers")
        live = {v["id"]: v for _, (v, _) in etcd_range(etcd, "shale-local/shale/brokers/").items()}
        for n in (1, 2, 3):
            assert live[n]["listeners"] == {"PLAINTEXT": "127.0.0.1:%d" % (port + n - 1)}, live
        ctl = etcd_range(etcd, "shale-local/shale/controller")
        assert ctl["shale-local/shale/controller"][0]["id"] in (1, 2, 3), ctl
        b1 = types.SimpleNamespace(bootstrap="127.0.0.1:%d" % port,
                                   log=lambda: open(os.path.join(d, "b1.log")).read())
        vals = ["v%d" % i for i in range(20)]
        assert produce(b1, "local", vals)
        assert consume(b1, "local") == vals
        print("scripts/cluster: brokers %s registered, controller %d" %
              (want, ctl["shale-local/shale/controller"][0]["id"]))
    finally:
        r = subprocess.run([script, "stop", d], env=env, capture_output=True, text=True,
                           timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("b1", "b2", "b3", "etcd"):
        assert not os.path.exists(os.path.join(d, name + ".pid")), name
    for n in (1, 2, 3):
        with open(os.path.join(d, "b%d.log" % n)) as f:
            assert "stopped" in f.read(), "broker %d did not stop cleanly" % n
    print("scripts/cluster stop: all stopped")


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("cases: " + " ".join(sorted(CASES)))
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="shale-cluster-it-") as d:
        CASES[sys.argv[1]](d)
    print("ok")
