#!/usr/bin/env python3
"""Client compatibility matrix driver (Python 3, stdlib only).

Runs one client family through the scenario in README.md against a fresh broker:
  --broker kafka   Apache Kafka 4.x via $SHALE_SOURCE_DIR/scripts/kafka
  --broker shale   $SHALE_BIN serve --override listeners=... --override data.dir=...
  --broker shale-cluster  etcd and three `shale serve` sharing one object directory (cluster mode)
  --bootstrap H:P  an already running broker (no restart phase; for manual runs)
  --broker-state D a shared broker started by `--up --broker-state D` (ctest's fixture), which
                   this run restarts but leaves running; `--down --broker-state D` stops it

The client program (one per family, see client_command) does the Kafka work and reports JSON lines;
this driver decides the phases and checks the invariants: every record consumed exactly once with
its key, value and headers, at the partition/offset its producer was told, in per-partition order,
by a group that rebalanced as members joined and left, resuming from committed offsets after a
broker restart. Exit status 0 only when every check passed.
"""

import argparse
import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import records  # noqa: E402

CACHE = os.environ.get("SHALE_CACHE_DIR", os.path.expanduser("~/.cache/shale"))
SOURCE_DIR = os.environ.get("SHALE_SOURCE_DIR", os.path.normpath(os.path.join(HERE, "..", "..", "..")))
PHASE_TIMEOUT = 120  # seconds; a phase that takes longer is a failure (a hang), not a slow run


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, deadline):
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def log(msg):
    sys.stderr.write("[compat %7.1fs] %s\n" % (time.monotonic() - T0, msg))
    sys.stderr.flush()


T0 = time.monotonic()


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Brokers. Each is described by a small state dict (kind, directory, ports), so a broker started
# by one process (`--up`, a ctest fixture) can be used, restarted and stopped by others.


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def launch_detached(cmd, logpath, pidpath):
    """Starts a broker process in its own session, so it outlives this driver when shared; a
    thread reaps it if it exits while this driver runs (a zombie would still look alive)."""
    with open(logpath, "a") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    with open(pidpath, "w") as f:
        f.write("%d\n" % proc.pid)
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc


class KafkaBroker:
    """Apache Kafka through scripts/kafka (owned by the perf tooling) in a directory of its own."""

    def __init__(self, dir, port=None, cport=None):
        self.script = os.path.join(SOURCE_DIR, "scripts", "kafka")
        if not os.path.exists(self.script):
            raise Failure("%s is missing" % self.script)
        self.dir = dir
        self.port = port or free_port()
        self.cport = cport or free_port()
        while self.cport == self.port:
            self.cport = free_port()
        self.bootstrap = "127.0.0.1:%d" % self.port
        self.pidfile = os.path.join(self.dir, "kafka.pid")

    def state(self):
        return {"kind": "kafka", "dir": self.dir, "port": self.port, "cport": self.cport}

    def _run(self, *args):
        r = subprocess.run([self.script, *args], capture_output=True, text=True, timeout=180)
        if r.returncode != 0:
            raise Failure("scripts/kafka %s failed (%d):\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
        return r.stdout

    def running(self):
        pid = read_pid(self.pidfile)
        return pid is not None and pid_alive(pid) and wait_port(self.port, time.monotonic() + 1)

    def start(self):
        if os.path.exists(os.path.join(self.dir, "server.properties")):
            self._relaunch()
        else:
            self._run("start", self.dir, str(self.port), str(self.cport))

    def stop(self, kill=False):
        pid = read_pid(self.pidfile)
        if kill and pid is not None:
            # scripts/kafka stops gracefully; the kill -9 variant signals the pid it recorded and
            # then lets `stop` clean up after the dead process.
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 30
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
        if os.path.exists(self.pidfile):
            self._run("stop", self.dir)

    def restart(self, kill=False):
        self.stop(kill)
        self.start()

    def _relaunch(self):
        """Starts Kafka again on the data of an earlier start.

        `scripts/kafka start` formats storage with a fresh random cluster id, which the existing
        meta.properties refuses, so this relaunches kafka.Kafka on the server.properties and
        log4j2.xml that `start` wrote, with the classpath it reports, and records the pid where
        `scripts/kafka stop` looks for it.
        """
        server_log = os.path.join(self.dir, "logs", "server.log")
        started_before = self._count_started(server_log)
        cp = self._run("classpath").strip()
        # The JVM options scripts/kafka start uses (KAFKA_HEAP_OPTS overrides the heap there too).
        heap = os.environ.get("KAFKA_HEAP_OPTS", "-Xmx512M -Xms128M").split()
        cmd = ["java", *heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true"]
        cmd += ["-Dlog4j2.configurationFile=%s" % os.path.join(self.dir, "log4j2.xml"), "-cp", cp]
        cmd += ["kafka.Kafka", os.path.join(self.dir, "server.properties")]
        proc = launch_detached(cmd, os.path.join(self.dir, "logs", "stdout.log"), self.pidfile)
        deadline = time.monotonic() + 120
        while self._count_started(server_log) <= started_before:
            if proc.poll() is not None:
                raise Failure("the restarted broker exited with %d:\n%s" % (proc.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                raise Failure("the restarted broker was not ready within 120 s")
            time.sleep(0.2)
        if not wait_port(self.port, deadline):
            raise Failure("the restarted broker does not listen on %d" % self.port)

    @staticmethod
    def _count_started(path):
        try:
            with open(path) as f:
                return f.read().count("Kafka Server started")
        except OSError:
            return 0

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "logs", "server.log")) as f:
                return "".join(f.readlines()[-40:])
        except OSError:
            return ""


class ShaleBroker:
    """`shale serve` with a loopback listener and a private data directory."""

    def __init__(self, dir, port=None):
        self.bin = os.environ.get("SHALE_BIN", "")
        if not self.bin or not os.path.exists(self.bin):
            raise Failure("SHALE_BIN is not set to the shale binary")
        self.dir = dir
        self.port = port or free_port()
        self.bootstrap = "127.0.0.1:%d" % self.port
        self.logpath = os.path.join(dir, "shale.log")
        self.pidfile = os.path.join(dir, "shale.pid")

    def state(self):
        return {"kind": "shale", "dir": self.dir, "port": self.port}

    def running(self):
        pid = read_pid(self.pidfile)
        return pid is not None and pid_alive(pid) and wait_port(self.port, time.monotonic() + 1)

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        cmd = [self.bin, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % self.port]
        cmd += ["--override", "data.dir=%s" % os.path.join(self.dir, "data")]
        proc = launch_detached(cmd, self.logpath, self.pidfile)
        if not wait_port(self.port, time.monotonic() + 60) or proc.poll() is not None:
            raise Failure("shale serve did not listen on %d:\n%s" % (self.port, self.log_tail()))

    def stop(self, kill=False):
        pid = read_pid(self.pidfile)
        if pid is None:
            return
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
            deadline = time.monotonic() + 60
            while pid_alive(pid):
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    raise Failure("shale serve did not stop within 60 s of SIGTERM")
                time.sleep(0.1)
        os.remove(self.pidfile)

    def restart(self, kill=False):
        self.stop(kill)
        self.start()

    def log_tail(self):
        try:
            with open(self.logpath) as f:
                return "".join(f.readlines()[-40:])
        except OSError:
            return ""


class ShaleCluster:
    """A three-broker Shale cluster: one etcd member (Debian's etcd-server) and three
    `shale serve` on loopback ports sharing one object directory, each with its own WAL. A
    restart stops and starts the three brokers (etcd keeps running); --down stops etcd too."""

    def __init__(self, dir, ports=None, etcd_ports=None):
        self.bin = os.environ.get("SHALE_BIN", "")
        if not self.bin or not os.path.exists(self.bin):
            raise Failure("SHALE_BIN is not set to the shale binary")
        self.dir = dir
        self.ports = ports or [free_port() for _ in range(3)]
        self.etcd_ports = etcd_ports or [free_port(), free_port()]
        self.bootstrap = ",".join("127.0.0.1:%d" % p for p in self.ports)

    def state(self):
        return {"kind": "shale-cluster", "dir": self.dir, "ports": self.ports,
                "etcd_ports": self.etcd_ports}

    def _pidfile(self, n):
        return os.path.join(self.dir, "b%d.pid" % n)

    def running(self):
        return all(read_pid(self._pidfile(n)) is not None and pid_alive(read_pid(self._pidfile(n)))
                   for n in (1, 2, 3)) and all(wait_port(p, time.monotonic() + 1) for p in self.ports)

    def _start_etcd(self):
        pid = read_pid(os.path.join(self.dir, "etcd.pid"))
        if pid is not None and pid_alive(pid):
            return
        etcd = shutil.which("etcd")
        if not etcd:
            raise Failure("etcd is not installed: run scripts/setup --test (scripts/setup.d/etcd.sh)")
        c, p = ("http://127.0.0.1:%d" % x for x in self.etcd_ports)
        launch_detached([etcd, "--name", "compat", "--data-dir", os.path.join(self.dir, "etcd"),
                         "--listen-client-urls", c, "--advertise-client-urls", c,
                         "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
                         "--initial-cluster", "compat=" + p, "--log-level", "error"],
                        os.path.join(self.dir, "etcd.log"), os.path.join(self.dir, "etcd.pid"))
        if not wait_port(self.etcd_ports[0], time.monotonic() + 30):
            raise Failure("etcd did not listen on %d" % self.etcd_ports[0])

    def start(self):
        os.makedirs(os.path.join(self.dir, "objects"), exist_ok=True)
        self._start_etcd()
        procs = []
        for n, port in zip((1, 2, 3), self.ports):
            cmd = [self.bin, "serve"]
            for o in ("listeners=PLAINTEXT://127.0.0.1:%d" % port, "node.id=%d" % n,
                      "cluster.id=compat", "data.dir=%s" % os.path.join(self.dir, "b%d" % n),
                      "s3.data.buckets=0@file://%s" % os.path.join(self.dir, "objects"),
                      "metadata.store=etcd://127.0.0.1:%d/compat/" % self.etcd_ports[0],
                      "broker.session.timeout.ms=3000",
                      # Three WAL files on one test disk: small rings, not the 2 GiB default.
                      "s3.wal.capacity=268435456"):
                cmd += ["--override", o]
            procs.append(launch_detached(cmd, os.path.join(self.dir, "b%d.log" % n),
                                         self._pidfile(n)))
        for proc, port in zip(procs, self.ports):
            if not wait_port(port, time.monotonic() + 90) or proc.poll() is not None:
                raise Failure("a cluster broker did not listen on %d:\n%s" % (port, self.log_tail()))

    def stop(self, kill=False):
        pids = [read_pid(self._pidfile(n)) for n in (1, 2, 3)]
        for pid in pids:
            if pid is not None and pid_alive(pid):
                os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
        deadline = time.monotonic() + 60
        for n, pid in zip((1, 2, 3), pids):
            while pid is not None and pid_alive(pid):
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    raise Failure("cluster broker %d did not stop within 60 s of SIGTERM" % n)
                time.sleep(0.1)
            if os.path.exists(self._pidfile(n)):
                os.remove(self._pidfile(n))

    def down(self):
        self.stop()
        pid = read_pid(os.path.join(self.dir, "etcd.pid"))
        if pid is not None and pid_alive(pid):
            os.kill(pid, signal.SIGTERM)

    def restart(self, kill=False):
        self.stop(kill)
        self.start()

    def log_tail(self):
        out = ""
        for n in (1, 2, 3):
            try:
                with open(os.path.join(self.dir, "b%d.log" % n)) as f:
                    out += "--- broker %d\n" % n + "".join(f.readlines()[-15:])
            except OSError:
                pass
        return out


class ExternalBroker:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def running(self):
        return True

    def start(self):
        pass

    def stop(self, kill=False):
        pass

    def restart(self, kill=False):
        log("external broker: not restarting it")

    def log_tail(self):
        return ""


def broker_from_state(state_dir):
    try:
        with open(os.path.join(state_dir, "broker.json")) as f:
            st = json.load(f)
    except (OSError, ValueError) as e:
        raise Failure("no shared broker described in %s (%s): run --up first" % (state_dir, e))
    if st["kind"] == "kafka":
        return KafkaBroker(st["dir"], st["port"], st["cport"])
    if st["kind"] == "shale-cluster":
        return ShaleCluster(st["dir"], st["ports"], st["etcd_ports"])
    return ShaleBroker(st["dir"], st["port"])


def broker_up(kind, state_dir):
    """Starts a fresh shared broker and describes it in <state_dir>/broker.json."""
    if os.path.exists(os.path.join(state_dir, "broker.json")):
        try:
            broker_from_state(state_dir).stop()
        except Failure as e:
            log("stopping the previous shared broker: %s" % e)
    shutil.rmtree(state_dir, ignore_errors=True)
    os.makedirs(state_dir)
    d = os.path.join(state_dir, kind)
    broker = {"kafka": KafkaBroker, "shale": ShaleBroker, "shale-cluster": ShaleCluster}[kind](d)
    t = time.monotonic()
    broker.start()
    with open(os.path.join(state_dir, "broker.json"), "w") as f:
        json.dump(broker.state(), f)
    log("%s broker up at %s in %.1f s (state in %s)" % (kind, broker.bootstrap, time.monotonic() - t, state_dir))


def broker_down(state_dir):
    broker = broker_from_state(state_dir)
    t = time.monotonic()
    getattr(broker, "down", broker.stop)()
    log("broker stopped in %.1f s" % (time.monotonic() - t))
    shutil.rmtree(state_dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Client programs. Each takes: <create|produce|consume> --bootstrap --topic [--partitions]
# [--first --count --codecs] [--group --member], and prints JSON lines (README.md).


def client_command(name, args):
    venv_py = os.path.join(CACHE, "venv", "bin", "python")
    compat = os.path.join(CACHE, "compat")
    if name == "confluent":
        return [venv_py, os.path.join(HERE, "clients", "python", "confluent_client.py")]
    if name == "kafka-python":
        return [venv_py, os.path.join(HERE, "clients", "python", "kafka_python_client.py")]
    if name == "rdkafka":
        if not args.rdkafka_bin:
            raise Failure("--rdkafka-bin is required for the rdkafka client")
        return [args.rdkafka_bin]
    if name == "kcat":
        if not args.rdkafka_bin:
            raise Failure("--rdkafka-bin is required for the kcat client (it creates the topic)")
        return [sys.executable, os.path.join(HERE, "clients", "kcat_client.py"), "--rdkafka-bin", args.rdkafka_bin]
    if name == "franz-go":
        return [os.path.join(compat, "bin", "franz-compat")]
    if name == "java":
        lib = os.path.join(compat, "java", "lib", "*")
        classes = os.path.join(compat, "java", "classes")
        return ["java", "-Xss1m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", lib + ":" + classes, "CompatClient"]
    if name == "kafkajs":
        return ["node", os.path.join(HERE, "clients", "js", "client.js")]
    raise Failure("unknown client %s" % name)


def client_env():
    env = dict(os.environ)
    env["NODE_PATH"] = os.path.join(CACHE, "compat", "js", "node_modules")
    env["PYTHONUNBUFFERED"] = "1"
    return env


# Clients whose producer cannot attach per-record headers or report offsets.
PRODUCER_LIMITS = {"kcat": {"acks": False, "idx_header": False}}


class Member:
    """One consumer group member: a client process printing JSON lines."""

    def __init__(self, run, name):
        self.run = run
        self.name = name
        self.parts = set()
        self.closed = False
        self.started = False  # its SIGTERM handler is installed: a signal now means a clean close
        self.signalled = False
        self.stderr_path = os.path.join(run.workdir, "member-%s.stderr" % name)
        cmd = run.cmd + [
            "consume",
            "--bootstrap",
            run.broker.bootstrap,
            "--topic",
            run.topic,
            "--group",
            run.group,
            "--member",
            name,
        ]
        self.errf = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self.errf, text=True, env=client_env(), bufsize=1
        )
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                ev = json.loads(line)
                self.run.on_event(self, ev)
            except (ValueError, KeyError, TypeError) as e:
                self.run.problem("member %s printed a line the driver cannot use (%s): %r" % (self.name, e, line[:200]))

    def signal_stop(self):
        """Asks the member to close (once): commit, leave the group, exit 0."""
        if self.signalled:
            return
        self.run.wait("member %s to start" % self.name, lambda: self.started or self.proc.poll() is not None)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.signalled = True

    def stop(self):
        self.signal_stop()
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("member %s did not exit within 60 s of SIGTERM\n%s" % (self.name, self.stderr_tail()))
        self.thread.join(timeout=10)
        self.errf.close()
        if rc != 0:
            raise Failure("member %s exited with %d\n%s" % (self.name, rc, self.stderr_tail()))
        if not self.closed:
            raise Failure("member %s exited without reporting a clean close" % self.name)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr_tail(self):
        try:
            with open(self.stderr_path) as f:
                return "".join(f.readlines()[-30:])
        except OSError:
            return ""


class Run:
    count = 0  # runs started by this process

    def __init__(self, args, broker, workdir):
        self.args = args
        self.broker = broker
        self.workdir = workdir
        self.cmd = client_command(args.client, args)
        # Unique per run of this process too: a retried reference run must not find the first
        # attempt's topic and group on a shared broker.
        Run.count += 1
        tag = "%s-%d" % (args.client.replace("-", ""), os.getpid())
        if Run.count > 1:
            tag += "-%d" % Run.count
        self.topic = "compat-" + tag
        self.group = "compat-group-" + tag
        self.n = args.records
        self.limits = PRODUCER_LIMITS.get(args.client, {})
        self.lock = threading.Condition()
        self.acks = {}  # i -> (p, o)
        self.consumed = []  # (member, p, o, k, vh, headers)
        self.consumed_idx = collections.Counter()
        self.contiguous = 0  # every record below this index was consumed at least once
        self.problems = []
        self.notes = []
        self.members = []
        self.hash_to_i = {records.value_hash(records.value(i)): i for i in range(self.n)}
        self.phase_times = []

    # -- events from members
    def on_event(self, member, ev):
        with self.lock:
            kind = ev.get("ev")
            if kind == "rec":
                i = self.hash_to_i.get(ev.get("vh"))
                self.consumed.append((member.name, ev["p"], ev["o"], ev.get("k"), ev.get("vh"), ev.get("h"), i))
                if i is not None:
                    self.consumed_idx[i] += 1
                    while self.consumed_idx[self.contiguous] >= 1:  # Counter: 0 when absent
                        self.contiguous += 1
            elif kind == "assigned":
                member.parts |= set(ev["parts"])
            elif kind == "revoked":
                member.parts -= set(ev["parts"])
            elif kind == "started":
                member.started = True
            elif kind == "closed":
                member.closed = True
                member.parts = set()
            elif kind in ("error", "commit_failed"):
                self.notes.append("member %s: %s" % (member.name, ev))
            self.lock.notify_all()

    def problem(self, msg):
        with self.lock:
            self.problems.append(msg)
            self.lock.notify_all()

    def note(self, msg):
        with self.lock:
            self.notes.append(msg)

    # -- phases
    def phase(self, name, fn):
        t = time.monotonic()
        log("phase: %s" % name)
        fn()
        self.phase_times.append((name, time.monotonic() - t))

    def client(self, *args, timeout=PHASE_TIMEOUT):
        cmd = self.cmd + list(args)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=client_env())
        except subprocess.TimeoutExpired:
            raise Failure("%s timed out after %d s" % (" ".join(cmd), timeout))
        if r.returncode != 0:
            raise Failure("%s exited with %d\nstdout: %s\nstderr: %s" % (" ".join(cmd), r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
        return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]

    def create(self):
        self.client("create", "--bootstrap", self.broker.bootstrap, "--topic", self.topic, "--partitions", "6")

    def produce(self, first, count):
        evs = self.client(
            "produce",
            "--bootstrap",
            self.broker.bootstrap,
            "--topic",
            self.topic,
            "--first",
            str(first),
            "--count",
            str(count),
            "--codecs",
            ",".join(records.CODECS),
        )
        if not any(e.get("ev") == "done" for e in evs):
            raise Failure("producer did not report done")
        for e in evs:
            if e.get("ev") == "ack":
                i = e["i"]
                if i in self.acks:
                    self.problems.append("record %d acknowledged twice" % i)
                self.acks[i] = (e["p"], e["o"])
            elif e.get("ev") == "error":
                self.problems.append("produce error: %s" % e)
        if self.limits.get("acks", True):
            missing = [i for i in range(first, first + count) if i not in self.acks]
            if missing:
                raise Failure("%d records were not acknowledged (first %s)" % (len(missing), missing[:5]))

    def wait(self, what, cond):
        deadline = time.monotonic() + PHASE_TIMEOUT
        with self.lock:
            while not cond():
                for m in self.members:
                    if m.proc.poll() is not None and not m.closed:
                        raise Failure("member %s died (exit %s) while waiting for %s\n%s" % (m.name, m.proc.returncode, what, m.stderr_tail()))
                left = deadline - time.monotonic()
                if left <= 0:
                    state = {m.name: sorted(m.parts) for m in self.members}
                    raise Failure("timed out waiting for %s (assignment %s, %d records consumed)" % (what, state, len(self.consumed)))
                self.lock.wait(min(left, 0.5))

    def wait_balanced(self, live):
        def ok():
            parts = [p for m in live for p in m.parts]
            return sorted(parts) == list(range(6)) and all(m.parts for m in live)

        self.wait("a balanced assignment over %s" % [m.name for m in live], ok)
        with self.lock:
            log("assignment: %s" % {m.name: sorted(m.parts) for m in live})

    def wait_consumed(self, upto):
        self.wait("records [0, %d) consumed" % upto, lambda: self.contiguous >= upto)

    def start_member(self, name):
        m = Member(self, name)
        self.members.append(m)
        return m

    def scenario(self):
        n = self.n
        b1, b2, b3 = n // 2, n // 2 + n // 4, n
        self.phase("create topic (6 partitions)", self.create)
        a = b = c = None

        def join3():
            nonlocal a, b, c
            a, b, c = self.start_member("a"), self.start_member("b"), self.start_member("c")
            self.wait_balanced([a, b, c])

        self.phase("3 members join the group", join3)
        self.phase("produce [0, %d)" % b1, lambda: self.produce(0, b1))
        self.phase("group consumes [0, %d)" % b1, lambda: self.wait_consumed(b1))
        with self.lock:
            if not all(any(r[0] == m.name for r in self.consumed) for m in (a, b, c)):
                self.problems.append("not every one of the 3 members consumed records")

        def leave():
            c.stop()
            self.wait_balanced([a, b])

        self.phase("member c leaves, group rebalances", leave)
        self.phase("produce [%d, %d)" % (b1, b2), lambda: self.produce(b1, b2 - b1))
        self.phase("group consumes [0, %d)" % b2, lambda: self.wait_consumed(b2))

        def restart():
            for m in (a, b):
                m.signal_stop()
            for m in (a, b):
                m.stop()
            t = time.monotonic()
            self.broker.stop(kill=self.args.kill)
            log("broker stopped in %.1f s" % (time.monotonic() - t))
            t = time.monotonic()
            self.broker.start()
            log("broker started in %.1f s" % (time.monotonic() - t))

        self.phase("members stop, broker restarts%s" % (" (kill -9)" if self.args.kill else ""), restart)
        self.phase("produce [%d, %d)" % (b2, b3), lambda: self.produce(b2, b3 - b2))

        def resume():
            fresh = [self.start_member(name) for name in ("a2", "b2", "c2")]
            self.wait_consumed(b3)
            self.wait_balanced(fresh)

        self.phase("3 new members resume from committed offsets", resume)

        def finish():
            last = self.members[-3:]
            for m in last:  # signal all first: sequential closes would each wait for a rebalance
                m.signal_stop()
            for m in last:
                m.stop()

        self.phase("members stop", finish)

    # -- invariants
    def check(self):
        p = self.problems
        n = self.n
        with_acks = self.limits.get("acks", True)
        with_idx = self.limits.get("idx_header", True)
        per_member_part = collections.defaultdict(list)
        per_part = collections.defaultdict(dict)
        for member, part, off, k, vh, hdrs, i in self.consumed:
            if i is None:
                p.append("unexpected record at %d/%d: value hash %s" % (part, off, vh))
                continue
            if k != records.key(i):
                p.append("record %d: key %r, expected %r" % (i, k, records.key(i)))
            codec = records.codec_of(i, *self.batch_of(i), records.CODECS)
            want = [list(h) for h in records.headers(i, codec)]
            if not with_idx:
                want = [h for h in want if h[0] != "idx"]
            if hdrs != want:
                p.append("record %d: headers %r, expected %r" % (i, hdrs, want))
            if with_acks and self.acks.get(i) != (part, off):
                p.append("record %d consumed at %d/%d but acknowledged at %s" % (i, part, off, self.acks.get(i)))
            per_member_part[(member, part)].append(off)
            if off in per_part[part] and per_part[part][off] != i:
                p.append("partition %d offset %d holds two records" % (part, off))
            per_part[part][off] = i
        for i in range(n):
            c = self.consumed_idx[i]
            if c != 1:
                p.append("record %d consumed %d times" % (i, c))
        for (member, part), offs in per_member_part.items():
            if any(x >= y for x, y in zip(offs, offs[1:])):
                p.append("member %s saw partition %d out of order" % (member, part))
        for part, offs in per_part.items():
            idx = [offs[o] for o in sorted(offs)]
            if any(x >= y for x, y in zip(idx, idx[1:])):
                p.append("partition %d: records are not in produce order" % part)
        if with_acks:
            for part in range(6):
                got = sorted(o for i, (pp, o) in self.acks.items() if pp == part)
                if len(set(got)) != len(got):
                    p.append("partition %d: two records acknowledged at one offset" % part)
        if len(per_part) != 6:
            p.append("records landed in %d partitions, expected 6" % len(per_part))

    def batch_of(self, i):
        n = self.n
        b1, b2 = n // 2, n // 2 + n // 4
        if i < b1:
            return 0, b1
        if i < b2:
            return b1, b2 - b1
        return b2, n - b2


def install_sigterm_handler():
    """SIGTERM (ctest's timeout, a user) fails the run through the normal path, so the brokers
    and client processes it started are stopped rather than left behind."""

    def on_term(_signo, _frame):
        raise Failure("terminated by SIGTERM")

    signal.signal(signal.SIGTERM, on_term)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--client", help="the client family to run (see README.md)")
    ap.add_argument("--broker", choices=["kafka", "shale", "shale-cluster"], default="kafka")
    ap.add_argument("--broker-state", help="directory describing a shared broker (made by --up)")
    ap.add_argument("--up", action="store_true", help="start a fresh shared broker (--broker, --broker-state)")
    ap.add_argument("--down", action="store_true", help="stop the shared broker of --broker-state")
    ap.add_argument("--bootstrap", help="use this running broker (no restart phase)")
    ap.add_argument("--kill", action="store_true", help="restart the broker with kill -9")
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--rdkafka-bin", help="the compat_rdkafka_client program (rdkafka, kcat)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    if args.records % 20:
        ap.error("--records must be a multiple of 20")
    if (args.up or args.down) and not args.broker_state:
        ap.error("--up and --down need --broker-state")
    if not (args.up or args.down or args.client):
        ap.error("--client is required")

    install_sigterm_handler()
    if args.up or args.down:
        try:
            broker_up(args.broker, args.broker_state) if args.up else broker_down(args.broker_state)
        except Failure as e:
            log("FAILED: %s" % e)
            print("compat broker %s: FAIL" % ("up" if args.up else "down"))
            return 1
        print("compat broker %s: PASS" % ("up" if args.up else "down"))
        return 0

    ok = run_once(args)
    if not ok and args.broker == "kafka" and not args.bootstrap:
        # The Kafka runs are the reference that proves the scenario itself; a client stall there
        # (kafka-python once stopped heartbeating against Kafka under load) is not what the
        # matrix tests, so the reference gets one more attempt. Runs against Shale get none.
        log("the reference run against Apache Kafka failed; retrying it once")
        ok = run_once(args)
    print("compat %s/%s: %s" % (args.client, args.broker, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


def run_once(args):
    """Runs the scenario once; returns True when it passed."""
    workdir = tempfile.mkdtemp(prefix="shale-compat-%s-" % args.client)
    broker = None
    shared = bool(args.broker_state or args.bootstrap)
    run = None
    ok = False
    try:
        if args.bootstrap:
            broker = ExternalBroker(args.bootstrap)
        elif args.broker_state:
            broker = broker_from_state(args.broker_state)
            args.broker = broker.state()["kind"]
        elif args.broker == "kafka":
            broker = KafkaBroker(os.path.join(workdir, "kafka"))
        elif args.broker == "shale-cluster":
            broker = ShaleCluster(os.path.join(workdir, "cluster"))
        else:
            broker = ShaleBroker(os.path.join(workdir, "shale"))
        run = Run(args, broker, workdir)
        t = time.monotonic()
        if not shared:
            broker.start()
        elif not broker.running():
            log("the shared broker is down (an earlier run failed?): starting it")
            broker.start()
        run.phase_times.append(("broker start", time.monotonic() - t))
        log("client %s, broker %s at %s, topic %s" % (args.client, args.broker, broker.bootstrap, run.topic))
        run.scenario()
        run.check()
        ok = not run.problems
    except Failure as e:
        log("FAILED: %s" % e)
        if broker is not None:
            tail = broker.log_tail()
            if tail:
                log("broker log tail:\n" + tail)
    finally:
        if run is not None:
            for m in run.members:
                m.kill()
        if broker is not None and not shared:
            try:
                broker.stop()
            except Failure as e:
                log("stopping the broker: %s" % e)
        if args.keep or not ok:
            log("work directory kept: %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    if run is not None:
        for name, secs in run.phase_times:
            log("  %-50s %6.1f s" % (name, secs))
        for note in run.notes[:20]:
            log("note: %s" % note)
        for prob in run.problems[:30]:
            log("PROBLEM: %s" % prob)
        if len(run.problems) > 30:
            log("... and %d more problems" % (len(run.problems) - 30))
        log(
            "%s against %s: %d records produced, %d consumed, %d problems, %.1f s"
            % (args.client, args.broker, run.n, len(run.consumed), len(run.problems), time.monotonic() - T0)
        )
    return ok


if __name__ == "__main__":
    sys.exit(main())
