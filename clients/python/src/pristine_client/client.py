"""HTTP/JSON client of a pristine daemon, over its unix socket or TCP (https with the root's CA)."""

import hashlib
import http.client
import json
import os
import shutil
import socket
import ssl
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


# The longest wait_seconds the daemon accepts in one request (1 hour).
MAX_WAIT = 3600.0


class PristineError(Exception):
    """An error the daemon answered with, or a failure to reach it.

    ``status`` is the HTTP status (0 when the daemon was not reached): 400
    a value the daemon refuses (the message gives the allowed range), 429 too
    many lease requests in progress (retry after ``retry_after`` seconds).
    ``code`` is the daemon's machine-readable kind of the error
    (UNKEYED_BUILD), or "".
    """

    def __init__(self, message: str, status: int = 0, retry_after: float = 0, code: str = ""):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.code = code


#: PristineError.code of a template whose build runs code (a migrate
#: command or function) that no file keys, refused by the daemon: the key
#: would be the command's text alone, and a changed migration would
#: silently get the old template. Each integration answers it with its own
#: option names.
UNKEYED_BUILD = "unkeyed_build"


class NoDaemonError(PristineError):
    """Nothing answers where the daemon should be."""


def default_root() -> str:
    """$PRISTINE_ROOT, else /var/lib/pristine for root, else ~/.local/share/pristine."""
    if os.environ.get("PRISTINE_ROOT"):
        return os.environ["PRISTINE_ROOT"]
    if os.geteuid() == 0:
        return "/var/lib/pristine"
    return os.path.join(os.path.expanduser("~"), ".local", "share", "pristine")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]):
        super().__init__("pristine", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self._path)
        except BaseException:
            s.close()  # no "ResourceWarning: unclosed <socket>" after a "no daemon" error
            raise
        self.sock = s


@dataclass
class Lease:
    """A leased database: its connection, and the lease's id to release it."""

    id: str
    template: str
    host: str
    port: int
    socket: str
    user: str
    password: str
    database: str
    dsn: str
    url: str
    env: Dict[str, str] = field(default_factory=dict)
    slot: int = 0
    kept: bool = False
    pid: int = 0
    # The CA certificate (PEM) of a slot reachable over the network (`pristine
    # serve --slot-address`): connect with TLS and verify the server against
    # it and its host name. Empty for a loopback slot.
    ca: str = ""

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Lease":
        env = dict(e.split("=", 1) for e in d.get("env") or [] if "=" in e)
        return cls(id=d["id"], template=d.get("template", ""), host=d.get("host", "127.0.0.1"),
                   port=int(d.get("port", 0)), socket=d.get("socket", ""), user=d.get("user", ""),
                   password=d.get("password", ""), database=d.get("database", ""), dsn=d.get("dsn", ""),
                   url=d.get("url", ""), env=env, slot=int(d.get("slot", 0)), kept=bool(d.get("kept")),
                   pid=int(d.get("pid") or 0), ca=d.get("ca") or "")

    def ca_file(self) -> str:
        """A file holding the lease's CA certificate (written once per CA,
        0600, in the temporary directory), or "" for a loopback lease."""
        if not self.ca:
            return ""
        path = os.path.join(tempfile.gettempdir(),
                            f"pristine-ca-{os.getuid()}-{hashlib.sha256(self.ca.encode()).hexdigest()[:16]}.pem")
        if not os.path.exists(path):
            fd, tmp = tempfile.mkstemp(prefix="pristine-ca-", dir=os.path.dirname(path))
            with os.fdopen(fd, "w") as f:
                f.write(self.ca)
            os.replace(tmp, path)
        return path

    def connect_kwargs(self) -> Dict[str, Any]:
        """Keyword arguments for PyMySQL's connect(); a lease with a CA adds
        TLS verified against it, with the host name checked."""
        kw: Dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user,
                              "password": self.password, "database": self.database}
        if self.ca:
            kw.update(ssl_ca=self.ca_file(), ssl_verify_cert=True, ssl_verify_identity=True)
        return kw

    def pymysql_kwargs(self) -> Dict[str, Any]:
        """connect_kwargs() for PyMySQL alone, the fast way: a loopback
        lease (no CA) connects without TLS. PyMySQL 1.1 and later otherwise
        prefer TLS on every connection and build a TLS context for each,
        loading the system's CA store (60 ms a connection on an idle
        machine, 200 ms under load; 1 ms without). A lease with a CA keeps
        its verified TLS. Not for mysqlclient, which has no ssl_disabled."""
        kw = self.connect_kwargs()
        if not self.ca:
            kw["ssl_disabled"] = True
        return kw

    def mysql_command(self) -> str:
        """A client command line that opens this database: mariadb, or
        MySQL's mysql where only that is installed."""
        tls = f" --ssl-ca={self.ca_file()} --ssl-verify-server-cert" if self.ca else ""
        return f"{sql_client()} -h{self.host} -P{self.port} -u{self.user} -p{self.password}{tls} {self.database}"


def sql_client() -> str:
    """The command-line client on PATH: mariadb, else MySQL's mysql (a
    machine with MySQL's client only), else mariadb."""
    if shutil.which("mariadb") or not shutil.which("mysql"):
        return "mariadb"
    return "mysql"


class Client:
    """A connection to one daemon.

    Client(socket="/var/lib/pristine/pristine.sock") talks over the unix
    socket; Client(url="http://127.0.0.1:7878", token=T) over loopback TCP.
    """

    def __init__(self, socket: Optional[str] = None, url: Optional[str] = None,
                 token: Optional[str] = None, timeout: Optional[float] = None,
                 ca_file: Optional[str] = None, group: Optional[str] = None):
        if not socket and not url:
            socket = os.path.join(default_root(), "pristine.sock")
        self.socket = socket
        self.url = url.rstrip("/") if url else None
        self.token = token
        self.timeout = timeout
        # https://: verify the daemon against this CA (the daemon root's
        # tls/ca.pem) instead of the system's.
        self.ca_file = ca_file
        # The holder group of this client's leases (Pristine-Group), for a
        # daemon with --max-leases-per-group; a group token fixes it.
        self.group = group

    @classmethod
    def from_env(cls) -> "Client":
        """The daemon of PRISTINE_URL (+ PRISTINE_TOKEN, or the root's token
        file), else the unix socket of PRISTINE_ROOT or the default root."""
        url = os.environ.get("PRISTINE_URL")
        if url:
            token = os.environ.get("PRISTINE_TOKEN")
            if not token:
                path = os.path.join(default_root(), "token")
                try:
                    with open(path) as f:
                        token = f.read().strip()
                except OSError as e:
                    raise PristineError(f"PRISTINE_URL is set but PRISTINE_TOKEN is not, and {path}: {e.strerror}: "
                                        f"set PRISTINE_TOKEN to the token in {path} on the daemon's host") from e
            return cls(url=url, token=token, ca_file=os.environ.get("PRISTINE_CA_FILE") or None,
                       group=os.environ.get("PRISTINE_GROUP") or None)
        return cls(socket=os.path.join(default_root(), "pristine.sock"))

    def where(self) -> str:
        return self.socket or self.url or ""

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.url:
            u = urllib.parse.urlsplit(self.url if "://" in self.url else "http://" + self.url)
            if u.scheme == "https":
                ctx = ssl.create_default_context(cafile=self.ca_file)
                return http.client.HTTPSConnection(u.hostname, u.port or 443, timeout=timeout, context=ctx)
            return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
        return _UnixConnection(self.socket, timeout)

    def request(self, method: str, path: str, body: Any = None, ok=(200,), timeout: Optional[float] = None):
        """Send one request; return (status, decoded JSON) for statuses in ok,
        raise PristineError otherwise."""
        conn = self._connection(timeout if timeout is not None else self.timeout)
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if self.group:
            headers["Pristine-Group"] = self.group
        data = json.dumps(body).encode() if body is not None else None
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (FileNotFoundError, ConnectionRefusedError) as e:
            raise NoDaemonError(f"no pristine daemon is running on {self.where()}: "
                                "start one with `pristine pool up` or `pristine serve`") from e
        except OSError as e:
            raise PristineError(f"{method} {path}: {e}") from e
        finally:
            conn.close()
        if resp.status in ok:
            return resp.status, _decode(raw)
        msg, code = "", ""
        try:
            body = json.loads(raw)
            msg, code = body.get("error", ""), body.get("code", "")
        except (ValueError, AttributeError):
            pass
        try:
            retry_after = float(resp.getheader("Retry-After") or 0)
        except ValueError:
            retry_after = 0
        raise PristineError(msg or f"{method} {path}: {resp.status} {resp.reason}: {raw[:500]!r}", resp.status,
                            retry_after, code)

    # --- the API ---

    def health(self) -> Dict[str, Any]:
        return self.request("GET", "/v1/health")[1]

    def begin_template(self, name: str, key: str, database: Optional[str] = None,
                       ttl_seconds: Optional[float] = None, cache: Optional[str] = None,
                       key_files: Optional[int] = None, allow_stale: bool = False) -> Dict[str, Any]:
        """POST /v1/templates: the answer's status is ready, build (the caller
        builds: connection fields are set) or building (someone else is).
        cache names an OCI repository a fleet shares (the daemon must allow
        it: pristine serve --allow-cache). key_files, when given, says the
        build runs code and how many file paths the key covers: with none,
        the daemon refuses (PristineError.code UNKEYED_BUILD) unless
        allow_stale accepts a template that goes stale when the files the
        build reads change."""
        body: Dict[str, Any] = {"name": name, "key": key}
        if key_files is not None:
            body["runs_code"] = True
            if key_files:
                body["key_files"] = key_files
        if allow_stale:
            body["allow_stale"] = True
        if database:
            body["database"] = database
        if ttl_seconds:
            body["ttl_seconds"] = ttl_seconds
        if cache:
            body["cache"] = cache
        return self.request("POST", "/v1/templates", body, ok=(200, 201, 423))[1]

    def finish_template(self, hash: str) -> Dict[str, Any]:
        return self.request("PUT", "/v1/templates/" + _q(hash))[1]

    def abort_template(self, hash: str) -> None:
        self.request("DELETE", "/v1/templates/" + _q(hash))

    def wait_template(self, ref: str, wait: float) -> Dict[str, Any]:
        """GET /v1/templates/REF?wait=: status ready, building or failed."""
        return self.request("GET", f"/v1/templates/{_q(ref)}?wait={wait:.3f}", ok=(200, 410, 423),
                            timeout=wait + 30)[1]

    def pool(self, template: str) -> Dict[str, Any]:
        return self.request("GET", "/v1/pools/" + _q(template))[1]

    def pool_up(self, template: str, size: int, min_ready: int = 0) -> Dict[str, Any]:
        """Bring a pool up; returns its status once min_ready slots answered
        (0: the daemon's default, its first round of starts; size: every
        slot), the others going on starting in the daemon, each serving
        waiting leases as it answers. For a smaller pool of the same template
        that is up, grow it to size: the status comes back at once, the new
        slots start in the background."""
        req: Dict[str, Any] = {"template": template, "size": size}
        if min_ready > 0:
            req["min_ready"] = min_ready
        conn = self._connection(None)
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if self.group:
            headers["Pristine-Group"] = self.group
        try:
            conn.request("POST", "/v1/pools", body=json.dumps(req).encode(),
                         headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                raw = resp.read()
                try:
                    msg = json.loads(raw).get("error", "")
                except ValueError:
                    msg = raw.decode(errors="replace")
                raise PristineError(msg, resp.status)
            for line in resp:
                ev = json.loads(line)
                if ev.get("error"):
                    raise PristineError(ev["error"], ev.get("code", 500))
                if ev.get("status"):
                    return ev["status"]
        except (FileNotFoundError, ConnectionRefusedError) as e:
            raise NoDaemonError(f"no pristine daemon is running on {self.where()}: "
                                "start one with `pristine pool up` or `pristine serve`") from e
        finally:
            conn.close()
        raise PristineError("pool up: the daemon closed the connection before the pool was ready: "
                            "see serve.log under the root")

    def pool_down(self, template: str) -> Dict[str, Any]:
        return self.request("DELETE", "/v1/pools/" + _q(template))[1]

    def lease(self, template: Optional[str] = None, holder: str = "", ttl: float = 0, wait: float = 60,
              pid: Optional[int] = None, min_size: int = 0) -> Lease:
        """Lease a database, waiting up to wait seconds for a free one (and for
        a pool a peer is still bringing up). pid (default: this process) is
        the holder process: the daemon reclaims the lease when it exits.
        min_size is how many slots the run uses at once: a smaller pool grows
        to it first, at once, or the call fails at once (507) naming the
        daemon's --max-memory/--max-disk when they do not fit."""
        body: Dict[str, Any] = {"holder": holder, "pid": os.getpid() if pid is None else pid}
        if min_size:
            body["min_size"] = min_size
        if template:
            body["template"] = template
        if ttl:
            body["ttl_seconds"] = ttl
        deadline = time.monotonic() + wait
        while True:
            # The daemon waits at most an hour per request; longer waits loop.
            body["wait_seconds"] = min(max(deadline - time.monotonic(), 0.001), MAX_WAIT)
            pause = 0.1
            try:
                return Lease.from_json(self.request("POST", "/v1/leases", body,
                                                    timeout=body["wait_seconds"] + 30)[1])
            except PristineError as e:
                if e.status == 429:  # too many waiters: back off as the daemon asks
                    pause = max(e.retry_after, 0.1)
                elif e.status != 503:
                    raise
                if time.monotonic() + pause >= deadline:
                    raise
            time.sleep(pause)

    def release(self, lease_id: str, unchanged: bool = False) -> Dict[str, Any]:
        path = "/v1/leases/" + _q(lease_id) + ("?mode=unchanged" if unchanged else "")
        return self.request("DELETE", path)[1]

    def keep(self, lease_id: str) -> Lease:
        return Lease.from_json(self.request("POST", f"/v1/leases/{_q(lease_id)}/keep")[1])

    def extend(self, lease_id: str, ttl: float) -> Lease:
        return Lease.from_json(self.request("POST", f"/v1/leases/{_q(lease_id)}/extend", {"ttl_seconds": ttl})[1])

    def fork(self, lease_id: str, name: str, key: Optional[str] = None) -> Dict[str, Any]:
        """Make template name from lease lease_id's current state: everything
        committed before the fork starts (docs/architecture.md, "Fork"). The
        lease and its connections go on. With key (e.g. content_key of the
        fixture files), the fork is filed under its parent's key and this
        one, and a later fork with the same key answers at once with the
        template made before. Returns {"template": {...}, "built": bool,
        "seconds": float}; lease the fork by name once a pool of it is up
        (ensure_pool)."""
        body: Dict[str, Any] = {"name": name}
        if key:
            body["key"] = key
        return self.request("POST", f"/v1/leases/{_q(lease_id)}/fork", body)[1]

    def get_lease(self, lease_id: str) -> Lease:
        return Lease.from_json(self.request("GET", "/v1/leases/" + _q(lease_id))[1])

    def leases(self) -> List[Dict[str, Any]]:
        return self.request("GET", "/v1/leases")[1]

    def shutdown(self) -> None:
        self.request("POST", "/v1/shutdown", timeout=120)


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _decode(raw: bytes):
    return json.loads(raw) if raw.strip() else None
