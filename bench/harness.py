"""Shared pieces of Haul's benchmarks: measuring one run, nginx on loopback, tmux, tables.

Only the Python 3 standard library. Every tool is started through GNU time (`/usr/bin/time -f %M`), a
small launcher, so its peak RSS is its own: a child forked straight from this (bigger) Python process
would report Python's RSS high-water mark, which survives exec. Wall time is taken here around the
launcher, CPU time (user + sys) from `os.wait4` on it (the launcher's own share is about a millisecond).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRATCH = os.path.join(REPO, ".build-bench")
GNU_TIME = "/usr/bin/time"
MIB = 1 << 20
GIB = 1 << 30


def log(message: str = "") -> None:
    print(message, flush=True)


def note(message: str) -> None:
    """Progress lines go to stderr, so stdout is the report alone."""
    print(message, file=sys.stderr, flush=True)


# --- Set-up ------------------------------------------------------------------------------------------

#: Debian package for each command the benchmarks run.
PACKAGES = {
    "nginx": "nginx-light",
    "curl": "curl",
    "wget2": "wget2",
    "aria2c": "aria2",
    "axel": "axel",
    "tmux": "tmux",
    "eatmydata": "eatmydata",
    "vsftpd": "vsftpd",
    "sshd": "openssh-server",
    "sftp": "openssh-client",
    GNU_TIME: "time",
}


def ensure_packages(commands: list[str]) -> None:
    """Installs the Debian packages of missing commands (as root), or says which apt-get line to run."""
    missing = sorted({PACKAGES[c] for c in commands if not find_command(c)})
    if not missing:
        return
    if os.geteuid() != 0:
        sys.exit("bench: missing packages; run:\n  sudo apt-get install -y " + " ".join(missing))
    note(f"installing {' '.join(missing)} ...")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    still = [c for c in commands if not find_command(c)]
    if still:
        sys.exit(f"bench: still missing after apt-get: {' '.join(still)}")


def find_command(name: str) -> str | None:
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) else None
    # nginx lives in /usr/sbin, which is not on every PATH.
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


BUILD_PROCESSES = {"swift-build", "swift-frontend", "swift-test", "swift-driver"}


def builds_running() -> list[str]:
    """Compiler and test runs on this machine (others share it); their load makes every number noisier.
    Matched by process name, not command line (a test binary's arguments may say "swift-testing")."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as f:
                    name = f.read().strip()
            except OSError:
                continue
            if name in BUILD_PROCESSES:
                found.append(f"{entry} {name}")
    return found


def wait_for_builds(limit: float) -> str | None:
    """Waits up to `limit` seconds for running builds to finish; returns a note if one still runs."""
    deadline = time.monotonic() + limit
    announced = False
    while True:
        running = builds_running()
        if not running:
            return None
        if time.monotonic() >= deadline:
            return (f"a Swift build or test run was going on at the start ({len(running)} process(es)); "
                    "numbers are noisier than usual")
        if not announced:
            note(f"waiting up to {limit:.0f} s for a running Swift build to finish ...")
            announced = True
        time.sleep(5)


def swift_product(product: str, override: str | None, build: bool) -> str:
    """Path of a release product in .build-bench, brought up to date first (unless `build` is off, when it
    must exist already). `override` is used as it is. `haul` comes with `haul-server` beside it, which it
    starts for the service and `--demo` (an overriding haul needs its own beside it)."""
    if override:
        return os.path.abspath(override)
    path = os.path.join(SCRATCH, "release", product)
    companions = ["haul-server"] if product == "haul" else []
    for name in [product] + companions:
        if build:
            note(f"building {name} (swift build -c release --static-swift-stdlib --scratch-path .build-bench) ...")
            # As `make install` builds it: the Swift runtime and Foundation linked in.
            subprocess.run(["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", name,
                            "--scratch-path", SCRATCH], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        elif not os.path.exists(os.path.join(SCRATCH, "release", name)):
            sys.exit(f"bench: {os.path.join(SCRATCH, 'release', name)} is missing; build it with\n"
                     f"  swift build -c release --static-swift-stdlib --product {name} --scratch-path .build-bench")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 10, cafile: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    context = ssl.create_default_context(cafile=cafile) if url.startswith("https:") else None
    while True:
        try:
            request = urllib.request.Request(url, method="HEAD")
            with urllib.request.urlopen(request, timeout=2, context=context) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"no answer from {url}")
        time.sleep(0.05)


class Cleanup:
    """Things to undo at the end, also on Ctrl-C, SIGTERM and errors (newest first)."""

    def __init__(self) -> None:
        self.actions: list = []
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._interrupt)

    def _interrupt(self, signum, frame):  # noqa: ARG002
        raise KeyboardInterrupt(f"signal {signum}")

    def push(self, action) -> None:
        self.actions.append(action)

    def run(self) -> None:
        while self.actions:
            action = self.actions.pop()
            try:
                action()
            except Exception as error:  # keep cleaning up
                note(f"cleanup: {error}")


def write_random(path: str, size: int, seed: bytes) -> None:
    """Incompressible, deterministic bytes (SHAKE-256 of a seed), written without holding them all."""
    with open(path, "wb") as f:
        if size <= 8 * MIB:
            f.write(hashlib.shake_256(seed).digest(size))
            return
        # Expand a 16 MiB block and vary each copy, so no two MiB are equal.
        block = hashlib.shake_256(seed).digest(16 * MIB)
        written = 0
        counter = 0
        while written < size:
            n = min(len(block), size - written)
            head = hashlib.sha256(seed + counter.to_bytes(8, "little")).digest()
            f.write(head + block[len(head):n] if n > len(head) else head[:n])
            written += n
            counter += 1


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(4 * MIB):
            h.update(chunk)
    return h.hexdigest()


# --- nginx ------------------------------------------------------------------------------------------

def make_certificates(workdir: str) -> tuple[str, str, str]:
    """A throw-away certificate authority and a server certificate it signs for 127.0.0.1 (and
    localhost), made with the openssl command in `workdir/tls`; returns (CA, certificate, key) paths.
    Clients trust the CA by option (curl --cacert, wget2/aria2c --ca-certificate, haul --cacert)."""
    tls = os.path.join(workdir, "tls")
    os.makedirs(tls, exist_ok=True)
    ca, ca_key = os.path.join(tls, "ca.pem"), os.path.join(tls, "ca.key")
    cert, key, csr = os.path.join(tls, "server.pem"), os.path.join(tls, "server.key"), os.path.join(tls, "server.csr")
    ext = os.path.join(tls, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    run = lambda *argv: subprocess.run(["openssl", *argv], check=True, capture_output=True)  # noqa: E731
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
        "-subj", "/CN=haul bench CA", "-keyout", ca_key, "-out", ca)
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", key, "-out", csr)
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
        "-extfile", ext, "-out", cert)
    for path in (ca, cert, key):
        os.chmod(path, 0o644)
    return ca, cert, key


class Nginx:
    """nginx in the foreground on 127.0.0.1, with a generated config; `servers` maps a name to a
    per-connection rate in bytes per second (0 = unthrottled) and gets a port each. The servers named in
    `tls` speak HTTPS with HTTP/2 (ALPN h2, http/1.1) with `certificate` = (certificate, key). The servers
    in `client_connections` serve each client that many connections at once and answer the others 503, as
    nginx's limit_conn does."""

    def __init__(self, workdir: str, root: str, servers: dict[str, int], tls: set[str] | None = None,
                 certificate: tuple[str, str] | None = None, client_connections: dict[str, int] | None = None,
                 request_logs: set[str] | None = None, addresses: dict[str, str] | None = None):
        self.workdir = workdir
        #: Servers that listen on another loopback address than 127.0.0.1 (127.0.0.2, ...: other hosts to a
        #: client that counts its connections per host).
        self.addresses = addresses or {}
        self.root = root
        #: Servers that log every request (`request_log`): when it began and ended, by nginx's clock.
        self.request_logs = request_logs or set()
        self.ports = {name: free_port() for name in servers}
        self.rates = servers
        self.tls = tls or set()
        self.certificate = certificate
        #: Servers that serve a client this many connections at once and answer the others 503 (limit_conn).
        self.client_connections = client_connections or {}
        self.process: subprocess.Popen | None = None

    def url(self, server: str, name: str) -> str:
        scheme = "https" if server in self.tls else "http"
        return f"{scheme}://{self.addresses.get(server, '127.0.0.1')}:{self.ports[server]}/{name}"

    def request_log(self, server: str) -> str | None:
        """The file where `server` logs its requests (`Request`), if it is one of `request_logs`."""
        return os.path.join(self.workdir, f"requests-{server}.log") if server in self.request_logs else None

    def config(self) -> str:
        blocks = []
        for name, port in self.ports.items():
            rate = self.rates[name]
            limit = f"limit_rate {rate};" if rate else ""
            if name in self.client_connections:
                limit += f" limit_conn perclient {self.client_connections[name]}; limit_conn_status 503;"
            if name in self.tls:
                cert, key = self.certificate
                listen = (f"listen 127.0.0.1:{port} ssl http2; ssl_certificate {cert}; ssl_certificate_key {key}; "
                          "ssl_protocols TLSv1.2 TLSv1.3;")
            else:
                listen = f"listen {self.addresses.get(name, '127.0.0.1')}:{port};"
            log = f" access_log {self.request_log(name)} timing;" if name in self.request_logs else ""
            blocks.append(f"  server {{ {listen} root {self.root}; {limit}{log} }}  # {name}")
        tmp = os.path.join(self.workdir, "nginx-tmp")
        user = "user root root;" if os.geteuid() == 0 else ""
        return "\n".join([
            user,
            "worker_processes 1;",
            "daemon off;",
            f"pid {self.workdir}/nginx.pid;",
            f"error_log {self.workdir}/nginx-error.log warn;",
            "events { worker_connections 4096; }",
            "http {",
            "  access_log off;",
            # A request's end (the time it was logged, after its last byte was handed to the socket) and its
            # length, both in milliseconds, so its start is the one less the other (`Request`).
            "  log_format timing '$msec $request_time $status $bytes_sent \"$http_range\"';",
            "  sendfile on;",
            "  tcp_nopush on;",
            "  keepalive_requests 100000;",
            "  default_type application/octet-stream;",
            f"  client_body_temp_path {tmp}; proxy_temp_path {tmp}; fastcgi_temp_path {tmp};",
            f"  uwsgi_temp_path {tmp}; scgi_temp_path {tmp};",
            "  limit_conn_zone $binary_remote_addr zone=perclient:1m;" if self.client_connections else "",
            *blocks,
            "}",
            "",
        ])

    def start(self) -> None:
        os.makedirs(os.path.join(self.workdir, "nginx-tmp"), exist_ok=True)
        conf = os.path.join(self.workdir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        nginx = find_command("nginx")
        self.process = subprocess.Popen(
            [nginx, "-p", self.workdir, "-e", os.path.join(self.workdir, "nginx-error.log"), "-c", conf],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)

    def wait_ready(self, probe: str) -> None:
        try:
            for server in self.ports:
                wait_http(self.url(server, probe), cafile=self.certificate and os.path.join(
                    os.path.dirname(self.certificate[0]), "ca.pem"))
        except RuntimeError:
            self.stop()
            errors = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
            raise RuntimeError(f"nginx did not start: {errors.strip()}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: fast shutdown of master and workers
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def terminate(process: subprocess.Popen | None) -> None:
    """SIGTERM, then SIGKILL after 10 s: a helper server of the bench."""
    if process and process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Shaper:
    """bench/shaper.py in front of a server: every TCP connection through it gets at most `rate` bytes per
    second from the server (a per-connection limit a network applies, which HTTP/2's multiplexing shares
    among all the requests on a connection)."""

    def __init__(self, target_port: int, rate: int | None = None, delay: float = 0, window: int = 0):
        """`rate`: bytes per second per connection (None: no limit); `delay`: one-way seconds each direction,
        with at most `window` bytes in flight per direction (a long path: see bench/shaper.py)."""
        self.target_port = target_port
        self.rate = rate
        self.delay = delay
        self.window = window
        self.process: subprocess.Popen | None = None
        self.port = 0

    def start(self) -> None:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shaper.py")
        shaping = (["--rate", str(self.rate)] if self.rate else []) + (
            ["--delay", str(self.delay), "--window", str(self.window)] if self.delay else [])
        self.process = subprocess.Popen([sys.executable, script, "--to", f"127.0.0.1:{self.target_port}",
                                         *shaping], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, text=True, start_new_session=True)
        line = self.process.stdout.readline()
        match = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not match:
            self.stop()
            raise RuntimeError(f"the shaping proxy did not start: {line.strip()}")
        self.port = int(match.group(1))

    def stop(self) -> None:
        terminate(self.process)


class FirstConnection:
    """A minimal HTTP server on 127.0.0.1 that notes when each run's first TCP connection is accepted: the
    time from a tool's spawn to its first connection is its start (the loader, its runtime, its option
    parsing, its set-up), which every one of its downloads pays before the first byte is asked for. Each
    request gets a 5-byte 200 answer, without ranges, and the connection is closed."""

    BODY = b"hello"

    def __init__(self):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.first: float | None = None
        self.lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, name: str = "start.bin") -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def reset(self) -> None:
        with self.lock:
            self.first = None

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            accepted = time.perf_counter()
            with self.lock:
                if self.first is None:
                    self.first = accepted
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(10)
            request = b""
            try:
                while b"\r\n\r\n" not in request:
                    chunk = connection.recv(4096)
                    if not chunk:
                        return
                    request += chunk
                head = request.split(b" ", 1)[0] == b"HEAD"
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                                   b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(self.BODY)
                                   + (b"" if head else self.BODY))
            except OSError:
                return

    def stop(self) -> None:
        self.listener.close()

    def start_of(self, argv: list[str], cwd: str, timeout: float = 30) -> tuple[float | None, float, str | None]:
        """Runs argv; returns (seconds from spawn to the first connection, seconds to exit, error)."""
        self.reset()
        started = time.perf_counter()
        try:
            done = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, timeout, f"timed out after {timeout:.0f} s"
        ended = time.perf_counter() - started
        with self.lock:
            first = self.first
        error = None if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.decode(errors='replace')[-200:]}"
        return (None if first is None else first - started), ended, error


def rotated(items: list, round_: int) -> list:
    """The order of a round: A B A B, and each round starts one tool later, so no tool always follows the
    same one."""
    shift = round_ % len(items)
    return items[shift:] + items[:shift]


# --- Measuring one run ------------------------------------------------------------------------------

@dataclass
class Request:
    """One request as nginx logged it (`Nginx.request_logs`): seconds since the epoch, to the millisecond."""
    start: float
    end: float
    status: int
    bytes: int
    range: str

    @staticmethod
    def parse(line: str) -> "Request | None":
        fields = line.split(" ", 4)
        if len(fields) < 5:
            return None
        end, took = float(fields[0]), float(fields[1])
        return Request(end - took, end, int(fields[2]), int(fields[3]), fields[4].strip().strip('"'))


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_kib: int
    error: str | None = None
    #: When the tool was started (seconds since the epoch, as nginx's log has it).
    started: float = 0
    #: The requests the server logged during the run, where the scenario reads a log (`Scenario.request_log`).
    requests: list[Request] = field(default_factory=list)


def measure(argv: list[str], cwd: str, logfile: str, timeout: float) -> Sample:
    """Runs argv through GNU time; wall here, CPU from wait4, peak RSS from GNU time's %M."""
    timefile = logfile + ".rss"
    launcher = [GNU_TIME, "-f", "%M", "-o", timefile, *argv]
    with open(logfile, "wb") as out:
        previous = signal.signal(signal.SIGALRM, _alarm)
        epoch = time.time()
        started = time.perf_counter()
        process = subprocess.Popen(launcher, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                   start_new_session=True)
        # Block in wait4 (no polling to disturb the 2 cores); SIGALRM ends the wait on a timeout.
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            pid, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - started
        except _Timeout:
            os.killpg(process.pid, signal.SIGKILL)
            os.wait4(process.pid, 0)
            process.returncode = -9
            return Sample(0, 0, 0, f"timed out after {timeout:.0f} s")
        except BaseException:
            # Ctrl-C reaches only this process (the tool has its own session): stop the tool too.
            os.killpg(process.pid, signal.SIGKILL)
            os.wait4(process.pid, 0)
            process.returncode = -9
            raise
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    process.returncode = os.waitstatus_to_exitcode(status)
    rss = read_rss(timefile)
    if process.returncode != 0:
        return Sample(wall, 0, 0, f"exit {process.returncode}: {tail(logfile)}", started=epoch)
    return Sample(wall, usage.ru_utime + usage.ru_stime, rss, started=epoch)


def logged_requests(path: str, offset: int) -> list[Request]:
    """The requests nginx logged in `path` after `offset`. nginx writes a request's line when it ends the
    request: for an answer sent whole, when its last bytes are handed to the socket, before the tool can have
    read them, so those are all there when the tool has exited. A connection the tool closed early is logged
    when nginx notices (at once in these runs: axel's aborted first request is there); a line that came later
    would fall in the next run's, which `phases` leaves out."""
    with open(path) as f:
        f.seek(offset)
        return [r for r in map(Request.parse, f.read().splitlines()) if r]


def phases(samples: list[Sample]) -> tuple[float, float, float] | None:
    """Medians over `samples` (ms) of where a run's time went by the server's log: from the tool's start to its
    first request, from then to the end of its last request, and from that end to the tool's exit (the end of
    the transfer, the file's durability and the process's exit). None without logged requests."""
    rows = []
    for s in samples:
        # A line nginx wrote late for an earlier run (a connection it found closed only after a delay) began
        # before this run's spawn: not this run's. nginx's clock is read to the millisecond.
        own = [r for r in s.requests if r.start >= s.started - 0.001]
        if s.error is None and own:
            rows.append((min(r.start for r in own) - s.started, max(r.end for r in own) - s.started, s.wall))
    if not rows:
        return None
    first = median([a for a, _, _ in rows]) * 1000
    last = median([b - a for a, b, _ in rows]) * 1000
    after = median([w - b for _, b, w in rows]) * 1000
    return first, last, after


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


def read_rss(timefile: str) -> int:
    try:
        with open(timefile) as f:
            lines = [line for line in f.read().split("\n") if line.strip()]
        return int(lines[-1])
    except (OSError, ValueError, IndexError):
        return 0


def tail(path: str, lines: int = 3) -> str:
    try:
        with open(path, errors="replace") as f:
            text = f.read().strip().splitlines()
        return " | ".join(text[-lines:])[:300]
    except OSError:
        return ""


# --- tmux (haul's full-screen interface) ------------------------------------------------------------

class Tmux:
    """A private tmux server (its own socket), killed at the end."""

    def __init__(self) -> None:
        self.socket = f"haul-bench-{os.getpid()}"

    def cmd(self, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True,
                              text=True, check=check, timeout=timeout)

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                            found.append(int(entry))
                except (OSError, ValueError, IndexError):
                    pass
        return found


def cpu_ticks(pid: int) -> int:
    """User + system CPU time of a process so far, exited threads included, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))


@dataclass
class TUIRun:
    """haul in a detached 120x30 tmux session; done when `final` exists (haul renames NAME.part to NAME
    after the last fsync). The interface stays open until `q`, which the harness sends then."""
    tmux: Tmux
    haul_argv: list[str]
    workdir: str
    finals: list[str]
    timeout: float
    idle_seconds: float = 0
    linger: float = 0.3  # after done: long enough to see whether haul leaves by itself
    idle_cpu_percent: float | None = None
    screen: str = ""
    quit_itself: bool = False

    def run(self) -> Sample:
        tag = f"r{time.monotonic_ns()}"
        t0file = os.path.join(self.workdir, f"{tag}.t0")
        pidfile = os.path.join(self.workdir, f"{tag}.pid")
        timefile = os.path.join(self.workdir, f"{tag}.time")
        channel = f"done-{tag}"
        inner = " ".join(shell_quote(a) for a in [GNU_TIME, "-f", "%U %S %M", "-o", timefile, *self.haul_argv])
        # On a terminal, haul is a client of the per-user service (it starts one when none runs): a service
        # of this run's own (HAUL_HOME, short for the socket's path), never the user's queue.
        home = f"/tmp/hb-{tag[-8:]}"
        script = (f"echo $$ > {pidfile}; date +%s%N > {t0file}; HAUL_HOME={home} {inner}; "
                  f"tmux wait-for -S {channel}")
        self.tmux.cmd("new-session", "-d", "-s", tag, "-x", "120", "-y", "30", "sh", "-c", script)
        waiter = subprocess.Popen(["tmux", "-L", self.tmux.socket, "wait-for", channel],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + self.timeout
            # Each file is looked for until it is there, in order: a thousand finals cost one stat a poll,
            # not a thousand (the bench shares two cores with haul).
            found = 0
            while found < len(self.finals):
                if os.path.exists(self.finals[found]):
                    found += 1
                    continue
                if waiter.poll() is not None:
                    break  # haul ended before the files were there
                if time.monotonic() > deadline:
                    return Sample(0, 0, 0, f"timed out after {self.timeout:.0f} s")
                time.sleep(0.002)
            done = time.time_ns()
            try:
                with open(t0file) as f:
                    t0 = int(f.read())
            except (OSError, ValueError):
                return Sample(0, 0, 0, "no start time")
            wall = (done - t0) / 1e9
            try:
                waiter.wait(self.linger)
            except subprocess.TimeoutExpired:
                pass
            self.quit_itself = waiter.poll() is not None
            if self.idle_seconds and not self.quit_itself:
                self.idle_cpu_percent = self._idle_cpu(pidfile)
            if not self.quit_itself:
                self.screen = self.tmux.cmd("capture-pane", "-p", "-t", tag, check=False).stdout
                self.tmux.cmd("send-keys", "-t", tag, "q", check=False)
            try:
                waiter.wait(15)
            except subprocess.TimeoutExpired:
                return Sample(wall, 0, 0, "haul did not quit on q")
            with open(timefile) as f:
                fields = [line for line in f.read().splitlines() if line.strip()][-1].split()
            user, system, rss = float(fields[0]), float(fields[1]), int(fields[2])
            return Sample(wall, user + system, rss)
        finally:
            if waiter.poll() is None:
                waiter.kill()
                waiter.wait()
            self.tmux.cmd("kill-session", "-t", tag, check=False)
            _stop_service(home)

    def _idle_cpu(self, pidfile: str) -> float | None:
        """CPU share of the finished, idle interface over `idle_seconds`."""
        with open(pidfile) as f:
            shell = int(f.read())
        launcher = children(shell)
        haul = children(launcher[0]) if launcher else []
        if not haul:
            return None
        time.sleep(0.5)  # let the last redraws pass
        before = cpu_ticks(haul[0])
        time.sleep(self.idle_seconds)
        ticks = cpu_ticks(haul[0]) - before
        return 100 * ticks / os.sysconf("SC_CLK_TCK") / self.idle_seconds


def _stop_service(home: str) -> None:
    """Stops the service a TUI run started with `HAUL_HOME=home` (found by its environment) and removes the
    directory."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if f"HAUL_HOME={home}".encode() in f.read().split(b"\0"):
                        os.kill(int(entry), signal.SIGTERM)
            except OSError:
                pass
    shutil.rmtree(home, ignore_errors=True)


def shell_quote(arg: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_./:=%@,+-]+", arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"


# --- Scenarios --------------------------------------------------------------------------------------

@dataclass
class Tool:
    """One row of a table: a command line and what it must leave in its output directory."""
    name: str
    argv: object  # callable(outdir) -> list[str]
    haul: bool = False
    reference: bool = False  # shown, but not a peer in the targets
    tui: bool = False
    verify: bool = True
    samples: list[Sample] = field(default_factory=list)
    failure: str | None = None
    shown: str = ""  # the command line as printed

    def ok(self) -> list[Sample]:
        return [s for s in self.samples if s.error is None]


@dataclass
class Scenario:
    key: str
    title: str
    tools: list[Tool]
    expected: dict[str, int]  # file name -> size
    hashes: dict[str, str]  # file name -> sha256 of the source
    timeout: float
    tui_factory: object = None  # callable(tool, outdir) -> TUIRun
    busy_runs: int = 0  # runs that started while a Swift build or test run was going on
    runs: int = 0
    rounds_run: int = 0  # rounds so far: `run`'s, then `run_more`'s
    #: As on a user's machine: no sync and no quiet before a run, and no output deleted (each run still gets
    #: a fresh directory), so a run pays for what earlier ones left dirty. The outputs go with the work
    #: directory when the whole bench ends, not when the scenario does: on ext4 without a journal (these
    #: VMs' disks) every file created in the minutes after a mass delete searches past the recently freed
    #: inodes (`recently_deleted`), and the next small-file scenario would pay for this one's 45,000 files.
    keep_outputs: bool = False
    #: nginx's log of the scenario's requests (`Nginx.request_log`): each run's lines go to its sample.
    request_log: str | None = None

    def run(self, rounds: int, workdir: str) -> None:
        base = os.path.join(workdir, "out", self.key)
        # Left by an earlier run in the same work directory (--dir with --keep): not this run's outputs.
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        for tool in self.tools:
            tool.shown = " ".join(shell_quote(a) for a in tool.argv("OUT"))
        self._rounds(self.tools, 0, rounds, base, workdir)
        self.rounds_run = rounds

    def run_more(self, tools: list, rounds: int, workdir: str) -> None:
        """`rounds` more rounds of `tools` alone, after `run`: for a pair whose per-round ratio is noisier
        than the scenario's rounds can pin down. Their samples follow the others', so the pair's ratio is the
        median over all its rounds, and each tool's ratios to the rest still pair the common rounds only."""
        base = os.path.join(workdir, "out", self.key)
        self._rounds(tools, self.rounds_run, rounds, base, workdir)
        self.rounds_run += rounds

    def _rounds(self, tools: list, first: int, rounds: int, base: str, workdir: str) -> None:
        for r in range(first, first + rounds):
            order = rotated(tools, r)
            for tool in order:
                if tool.failure:
                    tool.samples.append(Sample(0, 0, 0, tool.failure))
                    continue
                # A fresh directory for every run (ext4 is slow to create files right after deleting).
                outdir = os.path.join(base, f"{slug(tool.name)}-{r}")
                os.makedirs(outdir)
                if not self.keep_outputs:
                    settle()
                self.runs += 1
                if builds_running():
                    self.busy_runs += 1
                if tool.tui:
                    run = self.tui_factory(tool, outdir)
                    sample = run.run()
                    if sample.error is None and run.quit_itself:
                        sample.error = "haul left by itself: the full-screen interface did not open"
                else:
                    logfile = os.path.join(workdir, "logs", f"{self.key}-{slug(tool.name)}-{r}.log")
                    logged = os.path.getsize(self.request_log) if self.request_log else 0
                    sample = measure(tool.argv(outdir), outdir, logfile, self.timeout)
                    if self.request_log:
                        sample.requests = logged_requests(self.request_log, logged)
                if sample.error is None and tool.verify:
                    sample.error = verify(outdir, self.expected, self.hashes if r == 0 else None)
                tool.samples.append(sample)
                if sample.error and r == 0:
                    tool.failure = sample.error  # a broken tool is not run again
                if not self.keep_outputs:
                    shutil.rmtree(outdir, ignore_errors=True)
                note(f"  {self.key} round {r + 1}/{first + rounds} {tool.name:<28} "
                     + (f"{sample.wall:7.3f} s {sample.cpu:7.3f} CPU-s {sample.rss_kib / 1024:7.1f} MiB"
                        if sample.error is None else f"FAILED: {sample.error}"))


def settle() -> None:
    """Before each run: write back what the last one left dirty, so runs start from a quiet disk."""
    os.sync()
    time.sleep(0.2)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def verify(outdir: str, expected: dict[str, int], hashes: dict[str, str] | None) -> str | None:
    """Every expected file with its exact size, nothing else left behind; sha256 too when `hashes`."""
    try:
        present = set(os.listdir(outdir))
    except OSError as error:
        return f"no output directory: {error}"
    missing = [n for n in expected if n not in present]
    if missing:
        return f"{len(missing)} file(s) missing, e.g. {missing[0]}"
    for name, size in expected.items():
        actual = os.path.getsize(os.path.join(outdir, name))
        if actual != size:
            return f"{name} has {actual} bytes, not {size}"
    extra = sorted(present - set(expected))
    if extra:
        return f"left behind: {', '.join(extra[:3])}"
    if hashes:
        for name, digest in hashes.items():
            if sha256_file(os.path.join(outdir, name)) != digest:
                return f"{name}: sha256 differs from the source"
    return None


# --- Numbers ----------------------------------------------------------------------------------------

def median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def paired_ratios(a: Tool, b: Tool, metric: str) -> list[float]:
    """a/b for each round where both ran cleanly (the rounds are paired: same conditions)."""
    ratios = []
    for sa, sb in zip(a.samples, b.samples):
        if sa.error is None and sb.error is None:
            va, vb = getattr(sa, metric), getattr(sb, metric)
            if vb > 0:
                ratios.append(va / vb)
    return ratios


def ratio(a: Tool, b: Tool, metric: str) -> float | None:
    return median(paired_ratios(a, b, metric))


def fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.{digits}f}{suffix}"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *(line(r) for r in rows)])


def scenario_table(scenario: Scenario, reference: Tool) -> str:
    """Medians per tool, and the median of the per-round ratios reference/tool."""
    rows = []
    for tool in scenario.tools:
        good = tool.ok()
        if tool.failure or not good:
            rows.append([tool.name, "FAILED", "", "", "", "", tool.failure or "no clean run"])
            continue
        same = tool is reference
        rows.append([
            tool.name,
            fmt(median([s.wall for s in good]), 3),
            fmt(median([s.cpu for s in good]), 3),
            fmt(median([s.rss_kib / 1024 for s in good]), 1),
            "" if same else fmt(ratio(reference, tool, "wall")),
            "" if same else fmt(ratio(reference, tool, "cpu")),
            f"{len(good)}/{len(tool.samples)}",
        ])
    return table(["tool", "wall s", "CPU s", "peak RSS MiB", f"wall {reference.name}/tool",
                  f"CPU {reference.name}/tool", "runs ok"], rows)


def commands_list(scenario: Scenario) -> str:
    return "\n".join(f"  {t.name}: {t.shown}" for t in scenario.tools)


def tool_versions(haul: str) -> list[str]:
    def first_line(argv):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            text = (out.stdout or out.stderr).strip().splitlines()
            return text[0].strip() if text else "?"
        except (OSError, subprocess.TimeoutExpired):
            return "missing"

    head = subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h %s", "--", "Sources", "Package.swift"],
                          capture_output=True,
                          text=True).stdout.strip()[:70]
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "Sources", "Package.swift"],
                           capture_output=True, text=True).stdout.strip().splitlines()
    built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(haul)))
    newer = subprocess.run(["find", os.path.join(REPO, "Sources"), "-newer", haul, "-name", "*.swift"],
                           capture_output=True, text=True).stdout.split()
    if newer:
        built += f", {len(newer)} source file(s) changed since"
    # The full-screen interface's downloads run in the service, haul-server beside haul: one left from an
    # older build (`--no-build`) would put older code in the TUI row than in the others.
    server = os.path.join(os.path.dirname(haul), "haul-server")
    service = []
    if os.path.exists(server):
        server_built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(server)))
        older = os.path.getmtime(server) < os.path.getmtime(haul) - 60
        service = [f"haul-server (the service the TUI row's downloads run in): built {server_built}"
                   + ("; OLDER than haul: the TUI row runs older code" if older else "")]
        if older:
            note(f"warning: {server} is older than {haul}; the TUI row runs its code")
    return [
        f"haul: {first_line([haul, '--version'])} ({os.path.relpath(haul, REPO)}, built {built}; "
        f"last source commit {head}"
        + (f", {len(dirty)} uncommitted source file(s)" if dirty else "") + ")",
        *service,
        f"curl: {first_line(['curl', '--version'])}",
        f"wget2: {first_line(['wget2', '--version'])}",
        f"aria2c: {first_line(['aria2c', '--version'])}",
        f"axel: {first_line(['axel', '--version'])}",
        f"nginx: {first_line([find_command('nginx') or 'nginx', '-v'])}",
        f"tmux: {first_line(['tmux', '-V'])}",
    ]


def ext4_journal_note(fs: str) -> str:
    """", without a journal" for an ext4 file system that has none (these VMs' disks): there every file
    created in the minutes after a mass delete searches past the recently freed inodes (`recently_deleted`),
    a cost that lands on whichever tool runs then, and the reason the bench keeps outputs to its end."""
    parts = fs.split()
    if len(parts) != 2 or parts[0] != "ext4" or not parts[1].startswith("/dev/"):
        return ""
    try:
        with open(f"/sys/fs/ext4/{os.path.basename(parts[1])}/journal_task") as f:
            return ", without a journal" if f.read().strip() == "<none>" else ""
    except OSError:
        return ""


def machine() -> list[str]:
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
            mem = f"{int(f.readline().split()[1]) / (1 << 20):.1f} GiB"
    except (OSError, ValueError):
        pass
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", tempfile.gettempdir()],
                        capture_output=True, text=True).stdout.strip()
    fs += ext4_journal_note(fs)
    os_name = "?"
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return [
        f"{os.cpu_count()} CPUs ({cpu}), {mem} RAM, {os_name}, kernel {os.uname().release}",
        f"files and downloads on {fs or '?'} ({tempfile.gettempdir()}); load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
    ]


# --- Issue 5: segments against the per-connection-throttled sample server ----------------------------

class SampleServer:
    """The repository's sample server (`--port 0 --rate R -q`); its URL is read from its first line."""

    def __init__(self, binary: str, rate: str, extra: list[str] | None = None):
        self.binary = binary
        self.rate = rate
        self.extra = extra or []
        self.process: subprocess.Popen | None = None
        self.base = ""

    def start(self) -> None:
        self.process = subprocess.Popen([self.binary, "--port", "0", "--rate", self.rate, "-q", "--no-jpegs"]
                                        + self.extra,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        seen = []
        for _ in range(20):
            line = self.process.stdout.readline()
            seen.append(line.strip())
            match = re.search(r"http://127\.0\.0\.1:\d+", line)
            if match:
                self.base = match.group(0)
                return
            if not line:
                break
        self.stop()
        raise RuntimeError(f"sample-server did not say where it listens: {' / '.join(seen)}")

    def url(self, name: str) -> str:
        return f"{self.base}/files/download?{name}"

    def stop(self) -> None:
        terminate(self.process)


def content_length(url: str) -> int:
    request = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.headers["Content-Length"])


def segments_check(haul: str, server_binary: str, workdir: str, rounds: int, name: str, rate: str,
                   cleanup: Cleanup) -> tuple[str, float | None]:
    """haul -s 1 against -s 4 on the throttled sample server; returns the report and the median of the
    per-round ratios wall(-s 1) / wall(-s 4)."""
    server = SampleServer(server_binary, rate)
    server.start()
    cleanup.push(server.stop)
    try:
        url = server.url(name)
        size = content_length(url)
        tools = [Tool(f"haul -s {n}", (lambda n: lambda out: [haul, "--plain", "-q", "-s", str(n), "-o", out,
                                                               url])(n), haul=True) for n in (1, 4)]
        scenario = Scenario("segments", f"{name} from the sample server at {rate}/s per connection", tools,
                            {name: size}, {}, timeout=600)
        # The server's bytes are generated, so round 1 checks that both downloads agree byte for byte.
        digests = {}
        base = os.path.join(workdir, "out", "segments")
        os.makedirs(base, exist_ok=True)
        for tool in tools:
            tool.shown = " ".join(shell_quote(a) for a in tool.argv("OUT"))
        for r in range(rounds):
            for tool in (tools if r % 2 == 0 else tools[::-1]):
                outdir = os.path.join(base, f"{slug(tool.name)}-{r}")
                os.makedirs(outdir)
                settle()
                sample = measure(tool.argv(outdir), outdir, os.path.join(workdir, "logs", f"segments-{r}.log"),
                                 timeout=600)
                if sample.error is None:
                    sample.error = verify(outdir, {name: size}, None)
                if sample.error is None and r == 0:
                    digests[tool.name] = sha256_file(os.path.join(outdir, name))
                tool.samples.append(sample)
                shutil.rmtree(outdir, ignore_errors=True)
                note(f"  segments round {r + 1}/{rounds} {tool.name:<10} "
                     + (f"{sample.wall:7.3f} s" if sample.error is None else f"FAILED: {sample.error}"))
        if len(set(digests.values())) > 1:
            tools[1].failure = "-s 4 and -s 1 downloads differ (sha256)"
        speedup = ratio(tools[0], tools[1], "wall")
        lines = [scenario_table(scenario, tools[0]),
                 "",
                 "Commands:", commands_list(scenario),
                 "",
                 f"speed-up of -s 4 over -s 1 (median of per-round wall(-s 1)/wall(-s 4)): {fmt(speedup)}x "
                 f"(target >= 3.5x: {'met' if speedup and speedup >= 3.5 else 'NOT met'})"]
        if tools[1].failure:
            lines.append(f"FAILED: {tools[1].failure}")
            speedup = None
        return "\n".join(lines), speedup
    finally:
        server.stop()
