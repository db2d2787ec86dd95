"""A real pristine daemon for the tests, on a fresh root under /dev/shm."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import socket
import tempfile
import threading
import time
import urllib.request

import pytest

from pristine_client import Client

pytest_plugins = ["pytester"]

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def pristine_bin(tmp_path_factory) -> str:
    """$PRISTINE_BIN, else a pristine built from this checkout."""
    b = os.environ.get("PRISTINE_BIN")
    if b:
        return b
    out = str(tmp_path_factory.mktemp("bin") / "pristine")
    go = shutil.which("go") or "/usr/local/go/bin/go"
    subprocess.run([go, "build", "-o", out, "./cmd/pristine"], cwd=REPO, check=True)
    return out


class Daemon:
    def __init__(self, root, addr, token, proc):
        self.root, self.addr, self.token, self.proc = root, addr, token, proc
        self.client = Client(socket=os.path.join(root, "pristine.sock"))

    def env(self):
        return {"PRISTINE_ROOT": self.root}


def kill_servers_under(path: str):
    """Kill mariadbd (or MySQL's mysqld) processes whose command line names
    path (ours only)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        if ("mariadbd" in cmd or "mysqld" in cmd) and path in cmd:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


@contextlib.contextmanager
def running_daemon(binary, env=None, args=()):
    """A `pristine serve` on a fresh root under /dev/shm, with env added to
    its environment and args to its flags; shut down and removed on exit."""
    base = tempfile.mkdtemp(prefix="pristine-clients-test-", dir="/dev/shm")
    # A root pristine runs its servers as the account pristine, which must
    # pass through this directory to the root inside.
    os.chmod(base, 0o711)
    root = os.path.join(base, "root")
    proc = subprocess.Popen([binary, "serve", "--root", root, "--listen", "127.0.0.1:0", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))
    addr = None
    for line in proc.stderr:
        m = re.match(r"pristine: serving http://([^/]+)/", line)
        if m:
            addr = m.group(1)
            break
    if addr is None:
        proc.wait()
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"{binary} serve did not start")
    # Drain the daemon's log so it never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    with open(os.path.join(root, "token")) as f:
        token = f.read().strip()
    d = Daemon(root, addr, token, proc)
    try:
        yield d
    finally:
        try:
            d.client.shutdown()
        except Exception:
            pass
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        kill_servers_under(base)
        shutil.rmtree(base, ignore_errors=True)


def sql_client() -> str:
    """The server's command-line client: mariadb, or MySQL's mysql where no
    mariadb is installed (the MySQL root of scripts/servers.sh)."""
    return "mariadb" if shutil.which("mariadb") else "mysql"


def need_mariadb():
    # $PRISTINE_MARIADBD names the server (MySQL's mysqld in the server
    # matrix, scripts/servers.sh), as pristine itself reads it.
    if os.environ.get("PRISTINE_MARIADBD"):
        return
    if not shutil.which("mariadbd") and not os.path.exists("/usr/sbin/mariadbd"):
        pytest.skip("mariadbd is not installed: run scripts/install-deps.sh")


@pytest.fixture(scope="session")
def binary(tmp_path_factory):
    need_mariadb()
    return pristine_bin(tmp_path_factory)


@pytest.fixture(scope="session")
def daemon(binary):
    with running_daemon(binary) as d:
        yield d


@pytest.fixture
def registry(tmp_path):
    """Debian's docker-registry on a free loopback port (plain HTTP),
    storing under tmp_path; its address."""
    exe = shutil.which("docker-registry")
    if not exe:
        pytest.skip("docker-registry is not installed: run scripts/install-deps.sh")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        addr = "127.0.0.1:%d" % s.getsockname()[1]
    cfg = tmp_path / "registry.yml"
    cfg.write_text("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
                   f"storage:\n  filesystem:\n    rootdirectory: {tmp_path / 'storage'}\n"
                   f"http:\n  addr: {addr}\n")
    proc = subprocess.Popen([exe, "serve", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://{addr}/v2/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("docker-registry did not start")
        yield addr
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def in_root(daemon, monkeypatch):
    """Point Client.from_env() at the test daemon."""
    monkeypatch.setenv("PRISTINE_ROOT", daemon.root)
    monkeypatch.delenv("PRISTINE_URL", raising=False)
    return daemon


def canary_sql():
    return "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO canary VALUES (1, 'pristine');"
