#!/usr/bin/env python3
"""Lookout benchmark orchestrator. Run it through Tests/bench/run.sh (`make bench`),
which installs the peers, builds Lookout and provides the work directory.

Starts, all on 127.0.0.1 and free ports, inside WORKDIR:
  * nginx origin: /1k (1024 B), /1m (1 MiB), /big (BIG_MIB MiB, over HTTPS for CONNECT)
  * Lookout twice (summary log on -> file, log off), tinyproxy, squid (no cache)
  * the one-hop floor: floor_relay.c (compiled here), a byte relay with no HTTP at all,
    in front of nginx's HTTP and HTTPS ports -- what any proxy in the path costs at least
then measures, for direct-to-nginx, the floor and each proxy, in one run:
  1. 1 KiB keep-alive:   wrk -t2 -c64 --latency          req/s, p50, p99
  2. 1 MiB responses:    wrk -t2 -c8                     MiB/s
  3. new conn/request:   wrk -t2 -c64 -H 'Connection: close'  req/s
  4. CONNECT bulk:       4 parallel curl over HTTPS (direct = straight TLS to nginx)  MiB/s,
                         then one stream alone (the per-chunk cost four streams hide)
  5. idle RSS:           1,000 idle keep-alive clients, KiB per connection
and prints a Markdown table (also written to --out). Python stdlib only.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LUA = os.path.join(HERE, "report.lua")
IDLE = os.path.join(HERE, "idle_rss.py")
SSE_CLIENTS = os.path.join(HERE, "sse_clients.py")
# Requests sent before the idle-RSS baseline: more than Lookout's live ring holds (`ui.ring_size`,
# 10,000 records), so the ring is full and the row counts what idle connections hold, not the
# bounded history of recent exchanges.
IDLE_WARMUP_REQUESTS = 12000
# What the 100 watchers of the "watched" row ask for: the failures view, the README's first filter.
WATCH_QUERY = "?filter=status%3A5xx%20or%20code%3A*"
BULK = os.path.join(HERE, "connect_bulk.py")
FLOOR = os.path.join(HERE, "floor_relay.c")
LOOPBACK = "127.0.0.1"

PROCS = []  # started Procs, stopped in reverse order at exit
PIDFILE = None  # process-group ids for run.sh's trap, emptied once everything is stopped


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_port(port, timeout, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.popen.poll() is not None:
            return False
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


class Proc:
    def __init__(self, name, cmd, workdir, env=None, cwd=None):
        self.name = name
        self.stderr_path = os.path.join(workdir, f"{name}.stderr")
        self.stdout_path = os.path.join(workdir, f"{name}.stdout")
        self.popen = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL,
            stdout=open(self.stdout_path, "wb"), stderr=open(self.stderr_path, "wb"),
            start_new_session=True, env=env, cwd=cwd)
        self.pid = self.popen.pid
        PROCS.append(self)
        # Let run.sh's trap kill the process group even if we die hard.
        global PIDFILE
        PIDFILE = os.path.join(workdir, "pids")
        with open(PIDFILE, "a") as f:
            f.write(f"{self.pid}\n")

    def stop(self):
        if self.popen.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.popen.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def tail(self, n=15):
        try:
            with open(self.stderr_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


def stop_all():
    while PROCS:
        PROCS.pop().stop()
    if PIDFILE:  # all stopped and reaped: their ids may be reused, so the trap must not use them
        open(PIDFILE, "w").close()


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def first_line(cmd):
    try:
        p = run(cmd, timeout=20)
        text = (p.stdout or p.stderr).strip()
        return text.splitlines()[0] if text else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


# --------------------------------------------------------------------------- servers

def start_nginx(work, big_mib, server_extra="", name="nginx", http2=False):
    """nginx on two free ports (HTTP, HTTPS) serving /1k, /1m and a sparse /big; ``server_extra``
    goes into both server blocks (e.g. locations with caching headers); ``http2`` offers h2 on
    the HTTPS port (ALPN)."""
    d = os.path.join(work, name)
    www = os.path.join(d, "www")
    os.makedirs(www)
    for sub in ("tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi"):
        os.makedirs(os.path.join(d, sub))
    with open(os.path.join(www, "1k"), "wb") as f:
        f.write(os.urandom(1024))
    with open(os.path.join(www, "1m"), "wb") as f:
        f.write(os.urandom(1 << 20))
    with open(os.path.join(www, "big"), "wb") as f:  # sparse: cheap to create, served from cache
        f.truncate(big_mib << 20)
    key, cert = os.path.join(d, "key.pem"), os.path.join(d, "cert.pem")
    p = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1"], timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"openssl failed: {p.stderr}")
    http_port, https_port = free_port(), free_port()
    nginx_v = run(["nginx", "-V"]).stderr
    temp_paths = ["client_body_temp_path tmp/body;"]
    for mod in ("proxy", "fastcgi", "uwsgi", "scgi"):
        if f"--without-http_{mod}_module" not in nginx_v:
            temp_paths.append(f"{mod}_temp_path tmp/{mod};")
    user = f"user {run(['id', '-un']).stdout.strip()} {run(['id', '-gn']).stdout.strip()};" \
        if os.geteuid() == 0 else ""
    conf = f"""
{user}
daemon off;
master_process on;
worker_processes auto;
worker_rlimit_nofile 16384;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    open_file_cache max=64 inactive=60s;
    {' '.join(temp_paths)}
    server {{
        listen {LOOPBACK}:{http_port} backlog=4096;
        root {www};
        {server_extra}
    }}
    server {{
        listen {LOOPBACK}:{https_port} ssl{' http2' if http2 else ''} backlog=4096;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:1m;
        root {www};
        {server_extra}
    }}
}}
"""
    conf_path = os.path.join(d, "nginx.conf")
    with open(conf_path, "w") as f:
        f.write(conf)
    proc = Proc(name, ["nginx", "-p", d, "-e", os.path.join(d, "error.log"), "-c", conf_path], work)
    if not (wait_port(http_port, 15, proc) and wait_port(https_port, 15, proc)):
        err = open(os.path.join(d, "error.log")).read() if os.path.exists(os.path.join(d, "error.log")) else ""
        raise RuntimeError(f"nginx did not start:\n{proc.tail()}\n{err}")
    return proc, http_port, https_port


def start_floor(work, http_port, https_port):
    """Floor relays to nginx's HTTP and HTTPS ports, and a splice(2) one to its HTTPS port;
    returns (http_port, https_port, pid, splice_https_port, splice_pid)."""
    binary = os.path.join(work, "floor_relay")
    p = run(["cc", "-O2", "-Wall", "-pthread", "-o", binary, FLOOR], timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"cc floor_relay.c failed:\n{p.stderr}")
    ports, pids = [], []
    for name, to, mode in (("floor-http", http_port, []), ("floor-https", https_port, []),
                           ("floor-splice-https", https_port, ["0", "splice"])):
        port = free_port()
        proc = Proc(name, [binary, str(port), str(to)] + mode, work)
        if not wait_port(port, 10, proc):
            raise RuntimeError(f"{name} did not start:\n{proc.tail()}")
        ports.append(port)
        pids.append(proc.pid)
    return ports[0], ports[1], pids[0], ports[2], pids[2]


def unprivileged_dir(path):
    """squid and tinyproxy refuse to keep root: give their dir to nobody."""
    os.makedirs(path)
    if os.geteuid() == 0:
        shutil.chown(path, "nobody", "nogroup")


def start_tinyproxy(work, https_port):
    d = os.path.join(work, "tinyproxy")
    unprivileged_dir(d)
    port = free_port()
    user = "User nobody\nGroup nogroup\n" if os.geteuid() == 0 else ""
    conf = f"""{user}Port {port}
Listen {LOOPBACK}
Timeout 600
PidFile "{d}/tinyproxy.pid"
LogFile "{d}/tinyproxy.log"
LogLevel Error
MaxClients 4096
Allow 127.0.0.1
ConnectPort {https_port}
"""
    conf_path = os.path.join(d, "tinyproxy.conf")
    with open(conf_path, "w") as f:
        f.write(conf)
    proc = Proc("tinyproxy", ["tinyproxy", "-d", "-c", conf_path], work)
    if not wait_port(port, 15, proc):
        raise RuntimeError(f"tinyproxy did not start:\n{proc.tail()}")
    return proc, port


def start_squid(work, https_port, cache="cache deny all\ncache_mem 0 MB", name="squid"):
    """Squid on a free port; ``cache`` is its caching configuration (none by default)."""
    d = os.path.join(work, name)
    unprivileged_dir(d)
    port = free_port()
    user = "cache_effective_user nobody\ncache_effective_group nogroup\n" if os.geteuid() == 0 else ""
    conf = f"""{user}http_port {LOOPBACK}:{port}
pid_filename {d}/squid.pid
cache_log {d}/cache.log
access_log none
cache_store_log none
coredump_dir {d}
{cache}
workers 1
max_filedescriptors 8192
dns_nameservers 127.0.0.1
visible_hostname lookout-bench
pinger_enable off
netdb_filename none
icp_port 0
htcp_port 0
shutdown_lifetime 1 seconds
acl SSL_ports port {https_port}
http_access deny CONNECT !SSL_ports
http_access allow localhost
http_access deny all
"""
    conf_path = os.path.join(d, "squid.conf")
    with open(conf_path, "w") as f:
        f.write(conf)
    proc = Proc(name, ["squid", "-N", "-f", conf_path], work, cwd=d)
    if not wait_port(port, 30, proc):
        log_txt = open(os.path.join(d, "cache.log")).read()[-2000:] \
            if os.path.exists(os.path.join(d, "cache.log")) else ""
        raise RuntimeError(f"squid did not start:\n{proc.tail()}\n{log_txt}")
    return proc, port


def lookout_config_text(work, https_port, log_yaml, extra=""):
    state = os.path.join(work, "lookout-state")
    os.makedirs(state, exist_ok=True)
    return f"""listen: ["{LOOPBACK}:0"]
state_dir: "{state}"
connect:
  allowed_ports: [{https_port}]
log:
{log_yaml}
{extra}"""


def lookout_log_off_yaml(lookout, work, https_port):
    """Prefer an explicit off switch (log.enabled: false) if this build accepts it."""
    path = os.path.join(work, "lookout-probe.yaml")
    with open(path, "w") as f:
        f.write(lookout_config_text(work, https_port, "  enabled: false"))
    try:
        p = run([lookout, "config", "check", path], timeout=30)
    except subprocess.TimeoutExpired:
        p = None
    if p is not None and p.returncode == 0:
        return "  enabled: false", "log.enabled: false"
    return '  path: "/dev/null"', 'log.path: /dev/null (no off switch accepted; records are still formatted)'


def start_lookout(name, lookout, work, https_port, log_yaml, extra=""):
    conf_path = os.path.join(work, f"{name}.yaml")
    with open(conf_path, "w") as f:
        f.write(lookout_config_text(work, https_port, log_yaml, extra))
    p = run([lookout, "config", "check", conf_path], timeout=30)
    if p.returncode != 0:
        raise RuntimeError(f"lookout config check failed for {conf_path}:\n{p.stdout}{p.stderr}")
    proc = Proc(name, [lookout, "run", "--config", conf_path, "--listen", f"{LOOPBACK}:0"], work)
    deadline = time.monotonic() + 30
    pat = re.compile(r"listening on 127\.0\.0\.1:(\d+)")
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            break
        with open(proc.stderr_path, errors="replace") as f:
            m = pat.search(f.read())
        if m:
            port = int(m.group(1))
            if wait_port(port, 10, proc):
                return proc, port
            break
        time.sleep(0.1)
    raise RuntimeError(f"{name} did not report 'listening on 127.0.0.1:PORT':\n{proc.tail()}")


# --------------------------------------------------------------------------- CPU interference

def _stat_fields(pid):
    """The fields of /proc/PID/stat after the command name, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
        return data[data.rfind(")") + 2:].split()
    except OSError:
        return None


def _stat_ticks(pid):
    """utime+stime+cutime+cstime of one process (clock ticks)."""
    v = _stat_fields(pid)
    try:
        return sum(int(x) for x in v[11:15]) if v else 0
    except ValueError:
        return 0


def _process_tree(roots):
    """The pids in ``roots`` and all their live descendants."""
    kids = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            v = _stat_fields(entry)
            if v and len(v) > 1 and v[1].isdigit():
                kids.setdefault(int(v[1]), []).append(int(entry))
    todo, seen = list(roots), set()
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo.extend(kids.get(pid, []))
    return seen


def _ours_ticks():
    """CPU used by this script (plus reaped children: wrk, curl, helpers) and by the servers."""
    return _stat_ticks("self") + sum(_stat_ticks(pid) for pid in _process_tree({p.pid for p in PROCS}))


def _tree_user_system_ticks(pid):
    """(user, system) clock ticks of a process and its live descendants (nginx's and nghttpx's
    workers are children of the pid a target knows)."""
    user = system = 0
    for p in _process_tree([pid]):
        v = _stat_fields(p)
        if v and len(v) > 12:
            user, system = user + int(v[11]), system + int(v[12])
    return user, system


def _system_ticks():
    """(all CPU ticks, ticks busy in user/nice/system/steal) from /proc/stat; irq/softirq left out
    because loopback traffic is processed there on behalf of the benchmark."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v), v[0] + v[1] + v[2] + v[7]


class CpuWatch:
    """Fraction of the machine's CPU used by processes other than ours during a measurement."""

    def __init__(self):
        try:
            self.sys0, self.ours0 = _system_ticks(), _ours_ticks()
        except OSError:
            self.sys0 = None

    def foreign(self):
        if self.sys0 is None:
            return None
        try:
            (tot1, busy1), ours1 = _system_ticks(), _ours_ticks()
        except OSError:
            return None
        tot0, busy0 = self.sys0
        if tot1 <= tot0:
            return None
        return max(0.0, ((busy1 - busy0) - (ours1 - self.ours0)) / (tot1 - tot0))


# --------------------------------------------------------------------------- measurements

def start_nghttpx(work, backend_port, backend_proto, workers, tls=None):
    """nghttpx (Debian nghttp2-proxy), the reference proxy in C, as a reverse proxy to the backend
    with `workers` threads, no access log and nothing observed. With `tls` = (key, cert) it
    terminates TLS toward the client with that certificate and speaks `backend_proto` ("h2" or
    "http/1.1") over pooled TLS to the backend; without it, plain HTTP/1.1 on both sides. Returns
    (port, None, proc), or (None, why, None) when it is missing or does not start."""
    nghttpx = shutil.which("nghttpx") or next((p for p in ("/usr/sbin/nghttpx",) if os.path.exists(p)), None)
    if not nghttpx:
        return None, "nghttpx not found (Debian nghttp2-proxy)", None
    port = free_port()
    if tls:
        frontend, backend, keys = f"{LOOPBACK},{port}", f"{LOOPBACK},{backend_port};;proto={backend_proto};tls", list(tls)
    else:
        frontend, backend, keys = f"{LOOPBACK},{port};no-tls", f"{LOOPBACK},{backend_port}", []
    name = f"nghttpx-{backend_proto.replace('/', '')}{'-tls' if tls else ''}"
    proc = Proc(name, [nghttpx, "--conf=/dev/null", f"--workers={workers}", f"--frontend={frontend}",
                       f"--backend={backend}", "--insecure", "--no-ocsp", "--log-level=WARN", *keys], work)
    if not wait_port(port, 10, proc):
        return None, f"nghttpx did not start: {proc.tail()}", None
    return port, None, proc


class Target:
    def __init__(self, key, label, connect_port, pid, proxied, log_file=None, bulk_port=None, bulk_only=False,
                 keepalive_only=False):
        self.key, self.label = key, label
        self.port, self.pid, self.proxied = connect_port, pid, proxied
        self.log_file = log_file
        # Where the HTTPS bulk download connects when it is not a CONNECT through `port`.
        self.bulk_port = bulk_port
        # Measured on the CONNECT bulk row only.
        self.bulk_only = bulk_only
        # Measured on the 1 KiB keep-alive row only (a variant compared with its twin there).
        self.keepalive_only = keepalive_only
        self.results = {}
        self.notes = []


def wrk(target, origin_port, path, conns, duration, latency=False, headers=(), work=None, tag="", scheme="http"):
    """wrk against ``target``; through a proxy, requests are absolute-form ``scheme://origin/path``."""
    env = dict(os.environ)
    if target.proxied:
        env["BENCH_TARGET"] = f"{scheme}://{LOOPBACK}:{origin_port}{path}"
        env["BENCH_HOST"] = f"{LOOPBACK}:{origin_port}"
        url = f"http://{LOOPBACK}:{target.port}/"
    else:
        env.pop("BENCH_TARGET", None)
        url = f"http://{LOOPBACK}:{target.port}{path}"
    cmd = ["wrk", f"-t{min(2, conns)}", f"-c{conns}", f"-d{duration}s", "--timeout", "5s", "-s", LUA]
    if latency:
        cmd.append("--latency")
    for h in headers:
        cmd += ["-H", h]
    cmd.append(url)
    try:
        p = run(cmd, env=env, timeout=duration + 60)
    except subprocess.TimeoutExpired:
        return {"failed": "wrk timed out"}
    if work and tag:
        with open(os.path.join(work, f"wrk-{target.key}-{tag}.txt"), "w") as f:
            f.write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    m = re.search(r"^BENCHJSON (\{.*\})$", p.stdout, re.M)
    if not m:
        return {"failed": f"wrk rc={p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}"}
    r = json.loads(m.group(1))
    secs = r["duration_us"] / 1e6
    r["rps"] = r["requests"] / secs if secs else 0.0
    r["mib_s"] = r["bytes"] / secs / 2**20 if secs else 0.0
    r["errors"] = {k[4:]: v for k, v in r.items() if k.startswith("err_") and v}
    return r


def median_run(runs, metric):
    """The run with the median ``metric`` (the lower middle one for an even count), carrying
    every run's value as ``rounds``; a failed run counts as failed if it is the median."""
    values = [r.get(metric) if "failed" not in r else None for r in runs]
    ok = sorted((v, i) for i, v in enumerate(values) if v is not None)
    if not ok:
        return runs[0]
    chosen = dict(runs[ok[(len(ok) - 1) // 2][1]])
    if len(runs) > 1:
        chosen["rounds"] = values
        failures = sum(v is None for v in values)
        if failures:
            chosen["failed_rounds"] = failures
    return chosen


def log_records(target):
    """Count and truncate the Lookout JSON log (log-on instance) between tests."""
    if not target.log_file or not os.path.exists(target.log_file):
        return None
    n = 0
    with open(target.log_file, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            n += b.count(b"\n")
    os.truncate(target.log_file, 0)
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lookout", default="")
    ap.add_argument("--lookout-missing", default="", help="why Lookout is skipped")
    ap.add_argument("--duration", type=int, default=int(os.environ.get("BENCH_DURATION", "10")))
    ap.add_argument("--idle-conns", type=int, default=int(os.environ.get("BENCH_IDLE_CONNS", "1000")))
    ap.add_argument("--big-mib", type=int, default=int(os.environ.get("BENCH_BIG_MIB", "256")))
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", "1")),
                    help="measure each throughput row this many times, targets interleaved, and keep "
                         "each target's median run")
    ap.add_argument("--wait-idle", type=float, default=float(os.environ.get("BENCH_WAIT_IDLE", "120")),
                    help="seconds to wait for other CPU load to go away before measuring")
    args = ap.parse_args()
    D = max(1, args.duration)
    work = args.work
    t_start = time.monotonic()

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    notes = []
    busy = cpu_busy(2.0)
    wait_until = time.monotonic() + args.wait_idle
    while busy is not None and busy > 0.15 and time.monotonic() < wait_until:
        log(f"CPU {busy:.0%} busy with other work; waiting for an idle machine "
            f"(up to {wait_until - time.monotonic():.0f} s more, BENCH_WAIT_IDLE)")
        busy = cpu_busy(5.0)
    if busy is not None and busy > 0.15:
        notes.append(f"**Machine was busy at start** ({busy:.0%} of all CPU time used by other work "
                     f"over 2 s): figures are noisy; rerun on an idle machine.")
        log(f"warning: CPU {busy:.0%} busy before starting -- other work on this machine skews the results")
    try:
        log("starting nginx origin")
        nginx, http_port, https_port = start_nginx(work, args.big_mib)
        targets = [Target("direct", "direct (nginx)", http_port, nginx.pid, False)]
        try:
            log("starting the one-hop floor relays")
            f_http, f_https, f_pid, fs_https, fs_pid = start_floor(work, http_port, https_port)
            targets.append(Target("floor", "floor (C relay, no HTTP)", f_http, f_pid, False, bulk_port=f_https))
            targets.append(Target("floor_splice", "floor with splice (CONNECT row only)", None, fs_pid, False,
                                  bulk_port=fs_https, bulk_only=True))
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            notes.append(f"Floor relay skipped: {exc}")
        log_off_desc = None
        if args.lookout:
            log_path = os.path.join(work, "lookout-summary.jsonl")
            log_off_yaml, log_off_desc = lookout_log_off_yaml(args.lookout, work, https_port)
            log("starting Lookout (log on)")
            lo_on, p_on = start_lookout("lookout-log-on", args.lookout, work, https_port,
                                        f'  path: "{log_path}"')
            targets.append(Target("lookout_on", "Lookout (log on)", p_on, lo_on.pid, True, log_path))
            log(f"starting Lookout (log off: {log_off_desc})")
            lo_off, p_off = start_lookout("lookout-log-off", args.lookout, work, https_port, log_off_yaml)
            targets.append(Target("lookout_off", "Lookout (log off)", p_off, lo_off.pid, True))
            notes.append(f"Lookout 'log off' = {log_off_desc}.")
            # Metrics are on by default; their cost is the log-on twin with `metrics.enabled: false`.
            log("starting Lookout (log on, metrics off)")
            lo_nm, p_nm = start_lookout("lookout-metrics-off", args.lookout, work, https_port,
                                        f'  path: "{os.path.join(work, "lookout-summary-nm.jsonl")}"',
                                        "metrics:\n  enabled: false\n")
            targets.append(Target("lookout_nometrics", "Lookout (log on, metrics off; 1 KiB row only)", p_nm,
                                  lo_nm.pid, True, keepalive_only=True))
            # The log-on twin with 100 live-stream clients watching (`GET /events`).
            log("starting Lookout (log on, 100 /events clients)")
            lo_w, p_w = start_lookout("lookout-watched", args.lookout, work, https_port,
                                      f'  path: "{os.path.join(work, "lookout-summary-w.jsonl")}"')
            Proc("sse-watchers", [sys.executable, SSE_CLIENTS, "--connect", f"{LOOPBACK}:{p_w}",
                                  "--clients", "100", "--query", WATCH_QUERY], work)
            targets.append(Target("lookout_watched", "Lookout (log on, 100 /events clients; 1 KiB row only)", p_w,
                                  lo_w.pid, True, keepalive_only=True))
            notes.append("Lookout 'watched' = the log-on twin with 100 `GET /events` clients connected through "
                         f"the run, each asking `{WATCH_QUERY}` (the failures view; the benchmark's traffic has "
                         "none, so they cost the proxy their share of every record's fan-out and filter).")
        else:
            notes.append(f"Lookout skipped: {args.lookout_missing or 'lookout binary not found'}.")
        log("starting tinyproxy")
        tp, tp_port = start_tinyproxy(work, https_port)
        targets.append(Target("tinyproxy", "tinyproxy", tp_port, tp.pid, True))
        log("starting squid")
        sq, sq_port = start_squid(work, https_port)
        targets.append(Target("squid", "Squid", sq_port, sq.pid, True))
        # The reference: an HTTP/1.1 proxy in C that parses and relays and does nothing else (no
        # events, log or policies), as a reverse proxy (origin-form requests, pooled backend
        # connections), two workers as Lookout has two loops. What HTTP in between costs here.
        log("starting nghttpx (reference HTTP/1.1 proxy, plain on both sides)")
        ng_port, problem, ng = start_nghttpx(work, http_port, backend_proto="http/1.1", workers=2)
        if ng_port:
            targets.append(Target("nghttpx", "nghttpx (reference, reverse, no observation; 1 KiB rows only)", ng_port,
                                  ng.pid, False, keepalive_only=True))
        else:
            notes.append(f"nghttpx skipped: {problem}.")
        time.sleep(1)

        # 5 first: idle RSS on fresh processes (before any load inflates the heap).
        for t in targets:
            if t.key in ("floor", "floor_splice") or t.keepalive_only:  # a relay keeps no per-connection state
                continue
            log(f"idle RSS: {t.label}")
            if t.proxied:
                tgt, host = f"http://{LOOPBACK}:{http_port}/1k", f"{LOOPBACK}:{http_port}"
            else:
                tgt, host = "/1k", f"{LOOPBACK}:{http_port}"
            try:
                p = run([sys.executable, IDLE, "--connect", f"{LOOPBACK}:{t.port}", "--target", tgt,
                         "--host", host, "--pid", str(t.pid), "--count", str(args.idle_conns),
                         "--warmup-requests", str(IDLE_WARMUP_REQUESTS)],
                        timeout=120)
                r = json.loads(p.stdout) if p.returncode == 0 else {"failed": p.stderr.strip()[-300:]}
            except (subprocess.TimeoutExpired, ValueError) as exc:
                r = {"failed": repr(exc)}
            t.results["idle"] = r
            log_records(t)
            time.sleep(0.5)

        tests = [
            ("k1", "/1k", 64, True, ()),
            # One client sending one request at a time: each request's latency through the proxy.
            ("one", "/1k", 1, True, ()),
            ("m1", "/1m", 8, False, ()),
            ("close", "/1k", 64, False, ("Connection: close",)),
        ]
        rounds = max(1, args.rounds)
        for tag, path, conns, lat, hdrs in tests:
            runs = {t.key: [] for t in targets}
            for round_number in range(rounds):
                for t in targets:
                    # The extra Lookouts (metrics off, watched) measure their cost on the c64 row only.
                    if t.bulk_only or (t.keepalive_only and tag != "k1" and not (tag == "one" and t.key == "nghttpx")):
                        continue
                    if tag == "k1" and round_number == 0:  # short warm-up, not measured
                        wrk(t, http_port, path, conns, min(2, D))
                        log_records(t)
                    log(f"wrk {tag} ({path}, c{conns}{', Connection: close' if hdrs else ''}, {D}s)"
                        f"{f', round {round_number + 1}/{rounds}' if rounds > 1 else ''}: {t.label}")
                    cw = CpuWatch()
                    # On the keep-alive row, the target's own CPU per request, user and system
                    # apart: where a proxy's cost lies (its code, or the kernel's socket work).
                    ticks0 = _tree_user_system_ticks(t.pid) if tag == "k1" else None
                    r = wrk(t, http_port, path, conns, D, latency=lat, headers=hdrs, work=work, tag=tag)
                    r["foreign_cpu"] = cw.foreign()
                    if ticks0 is not None and r.get("requests"):
                        ticks1, hz = _tree_user_system_ticks(t.pid), os.sysconf("SC_CLK_TCK")
                        r["cpu_us_per_request"] = tuple((b - a) * 1e6 / hz / r["requests"] for a, b in zip(ticks0, ticks1))
                    n = log_records(t)
                    if n is not None:
                        r["log_records"] = n
                    runs[t.key].append(r)
                    time.sleep(1)
            for t in targets:
                if runs[t.key]:
                    t.results[tag] = median_run(runs[t.key], "mib_s" if tag == "m1" else "rps")

        # Four streams, then one: a single stream shows the per-chunk cost that four hide.
        for tag, parallel in (("bulk", args.parallel), ("bulk1", 1)):
            bulk_runs = {t.key: [] for t in targets}
            for round_number in range(rounds):
                for t in targets:
                    if t.keepalive_only:
                        continue
                    log(f"CONNECT bulk ({parallel} x {args.big_mib} MiB, >= {D}s)"
                        f"{f', round {round_number + 1}/{rounds}' if rounds > 1 else ''}: {t.label}")
                    big_url = f"https://{LOOPBACK}:{t.bulk_port or https_port}/big"
                    cmd = [sys.executable, BULK, "--url", big_url, "--parallel", str(parallel),
                           "--duration", str(D), "--expect-bytes", str(args.big_mib << 20)]
                    if t.proxied:
                        cmd += ["--proxy", f"http://{LOOPBACK}:{t.port}"]
                    cw = CpuWatch()
                    try:
                        p = run(cmd, timeout=D + 300)
                        r = json.loads(p.stdout) if p.returncode == 0 else {"failed": p.stderr.strip()[-300:]}
                    except (subprocess.TimeoutExpired, ValueError) as exc:
                        r = {"failed": repr(exc)}
                    n = log_records(t)
                    if n is not None:
                        r["log_records"] = n
                    r["foreign_cpu"] = cw.foreign()
                    bulk_runs[t.key].append(r)
                    time.sleep(1)
            for t in targets:
                if bulk_runs[t.key]:
                    t.results[tag] = median_run(bulk_runs[t.key], "mib_per_s")

        # Still alive after all that?
        for t, pr in [(t, next((p for p in PROCS if p.pid == t.pid), None)) for t in targets]:
            if pr is not None and pr.popen.poll() is not None:
                rc = pr.popen.returncode
                how = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
                saved = os.path.join(os.path.dirname(os.path.abspath(args.out)), f"{pr.name}.stderr")
                try:
                    shutil.copyfile(pr.stderr_path, saved)
                except OSError:
                    saved = pr.stderr_path
                t.notes.append(f"**process died during the run ({how})**; its stderr: `{saved}`")
                notes.append(f"**{t.label} died during the run ({how})**: stderr saved to `{saved}`; "
                             "its later measurements are missing.")
    finally:
        log("stopping servers")
        stop_all()

    report = render(targets, D, args, notes, log_off_desc, time.monotonic() - t_start)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(report)
    print(report)
    log(f"results written to {args.out}")


# --------------------------------------------------------------------------- report

def cpu_busy(seconds):
    """Fraction of all CPU time that was not idle over `seconds` (from /proc/stat)."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait
    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
        return 1 - (i1 - i0) / (t1 - t0) if t1 > t0 else None
    except (OSError, ValueError, IndexError):
        return None


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def machine_info(args):
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) // 1024} MiB"
    except (OSError, ValueError, IndexError):
        pass
    rows = [
        ("date (UTC)", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")),
        ("nproc", str(os.cpu_count())),
        ("CPU", cpu),
        ("memory", mem),
        ("kernel", platform.release()),
        ("load average at end (1/5/15 min)", " / ".join(open("/proc/loadavg").read().split()[:3])),
        ("lookout", first_line([args.lookout, "--version"]) if args.lookout else "not run"),
        ("nginx", first_line(["nginx", "-v"])),
        ("tinyproxy", first_line(["tinyproxy", "-v"])),
        ("squid", first_line(["squid", "-v"])),
        ("wrk", first_line(["wrk", "-v"]).split(" Copyright")[0]),
        ("curl", first_line(["curl", "--version"])),
        ("openssl", first_line(["openssl", "version"])),
        ("python", platform.python_version()),
    ]
    return rows


def fmt_num(v, digits=0):
    if v is None:
        return "—"
    return f"{v:,.{digits}f}"


def render(targets, D, args, notes, log_off_desc, elapsed):
    direct = targets[0]

    def val(t, key):
        r = t.results
        if key == "k1_rps":
            x = r.get("k1", {}); return None if "failed" in x or not x else x["rps"]
        if key == "k1_p50":
            x = r.get("k1", {}); return None if "failed" in x or not x else x["p50_us"] / 1000
        if key == "k1_p99":
            x = r.get("k1", {}); return None if "failed" in x or not x else x["p99_us"] / 1000
        if key == "one_rps":
            x = r.get("one", {}); return None if "failed" in x or not x else x["rps"]
        if key == "one_p50":
            x = r.get("one", {}); return None if "failed" in x or not x else x["p50_us"] / 1000
        if key == "m1":
            x = r.get("m1", {}); return None if "failed" in x or not x else x["mib_s"]
        if key == "close":
            x = r.get("close", {}); return None if "failed" in x or not x else x["rps"]
        if key in ("bulk", "bulk1"):
            x = r.get(key, {}); return None if "failed" in x or not x else x["mib_per_s"]
        if key == "idle":
            x = r.get("idle", {}); return None if "failed" in x or not x else x.get("per_conn_kib")
        return None

    metrics = [
        ("k1_rps", "1 KiB keep-alive, c64 (req/s)", 0),
        ("k1_p50", "1 KiB keep-alive p50 (ms)", 2),
        ("k1_p99", "1 KiB keep-alive p99 (ms)", 2),
        ("one_rps", "1 KiB, one connection, one request at a time (req/s)", 0),
        ("one_p50", "… p50 (ms)", 3),
        ("m1", "1 MiB responses, c8 (MiB/s)", 0),
        ("close", "new connection per request, c64 (req/s)", 0),
        ("bulk", f"CONNECT bulk HTTPS, {args.parallel} parallel (MiB/s)", 0),
        ("bulk1", "CONNECT bulk HTTPS, one stream (MiB/s)", 0),
        ("idle", f"RSS per idle keep-alive conn, {args.idle_conns} conns, after {IDLE_WARMUP_REQUESTS:,} requests (KiB)", 1),
    ]
    out = []
    out.append("# Lookout benchmark\n")
    rounds = max(1, args.rounds)
    how_often = (f"each cell the median of {rounds} rounds with the targets interleaved (every round's "
                 "figure is in the details)" if rounds > 1 else "one run")
    out.append(f"Each wrk run {D} s, 2 threads; all servers on 127.0.0.1, same machine, {how_often}. "
               "Cells: absolute value (ratio to direct). MiB = 2^20 bytes (wrk's \"MB\").\n")
    header = "| metric | " + " | ".join(t.label for t in targets) + " |"
    out.append(header)
    out.append("|" + "---|" * (len(targets) + 1))
    for key, label, digits in metrics:
        cells = []
        base = val(direct, key)
        for t in targets:
            v = val(t, key)
            if v is None:
                x = t.results.get(key.split("_")[0], {})
                if key == "idle" and x and "failed" not in x and x.get("still_open", 1) == 0:
                    cells.append("n/a (closes idle conns)")
                else:
                    cells.append("failed" if isinstance(x, dict) and "failed" in x else "—")
            elif t is direct or key == "idle" or not base:
                cells.append(fmt_num(v, digits))
            else:
                cells.append(f"{fmt_num(v, digits)} ({v / base:.2f}×)")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")

    # Goals (Lookout with the summary log on): against the floor relay of the same run, then
    # against direct.
    on = next((t for t in targets if t.key == "lookout_on"), None)
    off = next((t for t in targets if t.key == "lookout_off"), None)
    no_metrics = next((t for t in targets if t.key == "lookout_nometrics"), None)
    watched = next((t for t in targets if t.key == "lookout_watched"), None)
    floor_target = next((t for t in targets if t.key == "floor"), None)
    squid = next((t for t in targets if t.key == "squid"), None)
    if on is not None:
        def ratio(key, base=direct):
            a, b = (val(on, key), val(base, key)) if base is not None else (None, None)
            return a / b if a is not None and b else None

        def log_cost(key):
            a, b = (val(on, key), val(off, key)) if off is not None else (None, None)
            return (1 - a / b) if a is not None and b else None

        def metrics_cost():
            a, b = (val(on, "k1_rps"), val(no_metrics, "k1_rps")) if no_metrics is not None else (None, None)
            return (1 - a / b) if a is not None and b else None

        def watchers_cost():
            a, b = (val(watched, "k1_rps"), val(on, "k1_rps")) if watched is not None else (None, None)
            return (1 - a / b) if a is not None and b else None

        def ahead_of_squid():
            a, b = val(on, "bulk1"), (val(squid, "bulk1") if squid is not None else None)
            return a / b if a is not None and b else None

        goal_sets = [
            ("goals against the floor relay of the same run", [
                ("one CONNECT stream ≥ 0.95× the floor", ratio("bulk1", floor_target), lambda r: r >= 0.95, "{:.2f}×"),
                ("one CONNECT stream ahead of Squid", ahead_of_squid(), lambda r: r > 1.0, "{:.2f}× Squid"),
                ("1 KiB keep-alive ≥ 0.9× the floor", ratio("k1_rps", floor_target), lambda r: r >= 0.9, "{:.2f}×"),
                ("1 KiB keep-alive p99 ≤ 1.5× direct's", ratio("k1_p99"), lambda r: r <= 1.5, "{:.2f}×"),
                ("log cost ≤ 5 % (1 KiB keep-alive)", log_cost("k1_rps"), lambda c: c <= 0.05, "{:.1%}"),
                ("metrics cost ≤ 3 % (1 KiB keep-alive)", metrics_cost(), lambda c: c <= 0.03, "{:.1%}"),
                ("100 stream clients cost ≤ 10 % (1 KiB keep-alive)", watchers_cost(), lambda c: c <= 0.10,
                 "{:.1%}"),
                ("≤ 2 KiB RSS per idle connection", val(on, "idle"), lambda r: r <= 2.0, "{:.1f} KiB"),
            ]),
            ("targets against direct", [
                ("1 KiB keep-alive ≥ 0.45× direct", ratio("k1_rps"), lambda r: r >= 0.45, "{:.2f}×"),
                ("p99 ≤ 2× direct's", ratio("k1_p99"), lambda r: r <= 2.0, "{:.2f}×"),
                ("1 MiB ≥ 0.50× direct", ratio("m1"), lambda r: r >= 0.50, "{:.2f}×"),
                ("new connection per request ≥ 0.40× direct", ratio("close"), lambda r: r >= 0.40, "{:.2f}×"),
                ("CONNECT bulk ≥ 0.90× direct", ratio("bulk"), lambda r: r >= 0.90, "{:.2f}×"),
                ("≤ 4 KiB RSS per idle connection", val(on, "idle"), lambda r: r <= 4.0, "{:.1f} KiB"),
            ] + [(f"log cost ≤ 10 % ({name})", log_cost(key), lambda c: c <= 0.10, "{:.1%}")
                 for key, name in (("k1_rps", "1 KiB"), ("m1", "1 MiB"), ("close", "new conn"), ("bulk", "CONNECT"))]),
        ]
        for title, checks in goal_sets:
            out.append(f"## Lookout (log on) against the {title}\n")
            out.append("| goal | measured | met |")
            out.append("|---|---|---|")
            for name, v, ok, f in checks:
                out.append(f"| {name} | {f.format(v) if v is not None else '—'} | "
                           f"{'—' if v is None else ('yes' if ok(v) else '**no**')} |")
            out.append("")
        floor = next((t for t in targets if t.key == "floor"), None)
        if floor is not None:
            parts = []
            for key, name in (("k1_rps", "1 KiB keep-alive"), ("m1", "1 MiB"), ("close", "new connection"),
                              ("bulk", "CONNECT bulk"), ("bulk1", "CONNECT one stream")):
                a, fl, d = val(on, key), val(floor, key), val(direct, key)
                if a is not None and fl and d:
                    parts.append(f"{name}: floor {fl / d:.2f}× direct, Lookout {a / fl:.0%} of the floor")
            reference = next((t for t in targets if t.key == "nghttpx"), None)
            if reference is not None and val(reference, "k1_rps") and val(on, "k1_rps"):
                parts.append(f"1 KiB keep-alive through nghttpx (the reference HTTP proxy): "
                             f"{val(reference, 'k1_rps') / val(floor, 'k1_rps'):.0%} of the floor, Lookout "
                             f"{val(on, 'k1_rps') / val(reference, 'k1_rps'):.2f}× nghttpx")
            spliced = next((t for t in targets if t.key == "floor_splice"), None)
            if spliced is not None and val(spliced, "bulk1") and val(floor, "bulk1"):
                parts.append(f"one CONNECT stream through the splice floor: "
                             f"{val(spliced, 'bulk1') / val(floor, 'bulk1'):.2f}× the read/write floor")
            if spliced is not None and val(spliced, "bulk") and val(direct, "bulk"):
                parts.append(f"CONNECT bulk through the zero-copy (splice) floor: "
                             f"{val(spliced, 'bulk') / val(direct, 'bulk'):.2f}× direct")
            out.append("Against the floor (a byte relay with no HTTP, same run): " + "; ".join(parts) + ".\n")
        cpu = [(t.label, t.results["k1"]["cpu_us_per_request"]) for t in targets
               if isinstance(t.results.get("k1"), dict) and t.results["k1"].get("cpu_us_per_request")]
        if cpu:
            out.append("CPU per request on 1 KiB keep-alive, the median round, each target's own processes "
                       "(µs, user + system; `/proc/PID/stat`): "
                       + "; ".join(f"{label}: {u:.1f} + {sy:.1f}" for label, (u, sy) in cpu)
                       + ". The system part is mostly the kernel's socket work, which every relay does; the "
                       "user part is the target's own code.\n")

    out.append("## Details\n")
    for t in targets:
        lines = []
        for tag, name in (("k1", "1 KiB"), ("m1", "1 MiB"), ("close", "new conn")):
            r = t.results.get(tag)
            if not r:
                continue
            if "failed" in r:
                lines.append(f"{name}: FAILED: {r['failed']}")
                continue
            s = f"{name}: {r['requests']:,} requests"
            if r.get("rounds"):
                unit = "MiB/s" if tag == "m1" else "req/s"
                s += " (median of " + " / ".join("failed" if v is None else f"{v:,.0f}" for v in r["rounds"]) + f" {unit})"
            if (r.get("foreign_cpu") or 0) > 0.05:
                s += f" (other work: {r['foreign_cpu']:.0%} CPU)"
            if r.get("errors"):
                s += f", errors {r['errors']}"
            if "log_records" in r:
                s += f", {r['log_records']:,} log records"
            lines.append(s)
        r = t.results.get("bulk")
        if r:
            if "failed" in r:
                lines.append(f"CONNECT bulk: FAILED: {r['failed']}")
            else:
                s = (f"CONNECT bulk: {r['transfers']} transfers, {r['bytes'] / 2**20:,.0f} MiB "
                     f"in {r['elapsed_s']} s")
                if r.get("rounds"):
                    s += (" (median of " + " / ".join("failed" if v is None else f"{v:,.0f}" for v in r["rounds"])
                          + " MiB/s)")
                if r["failures"]:
                    s += f", {r['failures']} failed: {r['errors']}"
                if "log_records" in r:
                    s += f", {r['log_records']} log records"
                if (r.get("foreign_cpu") or 0) > 0.05:
                    s += f" (other work: {r['foreign_cpu']:.0%} CPU)"
                lines.append(s)
        r = t.results.get("idle")
        if r:
            if "failed" in r:
                lines.append(f"idle RSS: FAILED: {r['failed']}")
            else:
                s = (f"idle RSS: {r['rss_before_kib']:,} → {r['rss_after_kib']:,} KiB "
                     f"(+{r['delta_kib']:,}) with {r['still_open']}/{r['count']} conns still open")
                if r["response_said_close"]:
                    s += f"; {r['response_said_close']} responses carried `Connection: close`"
                if r["connect_failures"]:
                    s += f"; {r['connect_failures']} connects failed ({r.get('last_error')})"
                if set(r["statuses"]) - {"200"}:
                    s += f"; statuses {r['statuses']}"
                lines.append(s)
                if r["established"] and r["still_open"] == 0 and not r["response_said_close"]:
                    lines.append("**drops client keep-alive**: closes the connection after each response "
                                 "without sending `Connection: close` (wrk counts each as a read error "
                                 "and reconnects, so its keep-alive figures are really new-connection figures)")
                elif r["established"] and r["still_open"] < r["established"]:
                    lines.append(f"closed {r['established'] - r['still_open']} idle keep-alive connections")
        lines += t.notes
        out.append(f"- **{t.label}**: " + "; ".join(lines))
    out.append("")
    out.append("## Notes\n")
    foreign = [(t.label, tag, t.results[tag].get("foreign_cpu")) for t in targets
               for tag in ("k1", "m1", "close", "bulk") if isinstance(t.results.get(tag), dict)]
    foreign = [(a, b, c) for a, b, c in foreign if c is not None]
    if foreign:
        worst = max(foreign, key=lambda x: x[2])
        if worst[2] > 0.05:
            notes.append(f"**Other work on the machine used up to {worst[2]:.0%} of all CPU during a "
                         f"measurement** ({worst[0]}, {worst[1]}): these figures are disturbed; rerun on an "
                         "idle machine. Per-run shares are in the details.")
        else:
            notes.append(f"Other processes used at most {worst[2]:.1%} of the CPU during any measurement.")
    for n in notes + [
        "Floor = `Tests/bench/floor_relay.c`: relays bytes between the client and nginx with no HTTP "
        "at all (one epoll thread per core, one read and one write per chunk, no parsing, logging or "
        "timeouts); wrk and curl talk to it as if it were the origin. Its ratio to direct is the cost "
        "of the second loopback TCP connection alone: the most any proxy in the path can reach here. "
        "The splice floor is the same relay moving bytes socket → pipe → socket with splice(2), never "
        "through user space; measured on the CONNECT row only, it shows whether zero-copy raises that bound.",
        "Direct idle RSS is the whole nginx tree (master + workers); proxies are one process each.",
        "tinyproxy and Squid: default settings apart from ports/ACLs; Squid with `cache deny all`, "
        "`cache_mem 0`, `access_log none`.",
        "tinyproxy 1.11 closes every client connection after one response without sending "
        "`Connection: close` (RFC 9112 §9.6), so wrk reports a read error for each request and opens "
        "a new connection: its keep-alive figures are new-connection figures, and it holds no idle "
        "connections for the idle-RSS row.",
        "CONNECT bulk: each transfer is a fresh curl (new tunnel + TLS handshake) of "
        f"a {args.big_mib} MiB file; direct = curl straight to nginx's TLS port.",
        f"Wall time of the measurement run: {elapsed:.0f} s.",
    ]:
        out.append(f"- {n}")
    out.append("")
    out.append("## Machine\n")
    out.append("| | |")
    out.append("|---|---|")
    for k, v in machine_info(args):
        out.append(f"| {k} | {v} |")
    out.append("")
    return "\n".join(out)


def run_main(entry):
    """Runs a measurement script's main: servers are stopped on interruption and on errors."""
    try:
        entry()
    except KeyboardInterrupt as exc:
        stop_all()
        log(f"interrupted: {exc}")
        sys.exit(130)
    except RuntimeError as exc:
        stop_all()
        log(f"error: {exc}")
        sys.exit(1)


if __name__ == "__main__":
    run_main(main)
