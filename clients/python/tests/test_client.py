import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pymysql
import pytest

from pristine_client import (Client, NoDaemonError, PristineError, TemplateBuildError, content_key,
                             ensure_pool, ensure_template, run_command)

from conftest import canary_sql, sql_client


def connect(lease_or_conn):
    d = lease_or_conn if isinstance(lease_or_conn, dict) else lease_or_conn.connect_kwargs()
    return pymysql.connect(host=d["host"], port=int(d["port"]), user=d["user"], password=d["password"],
                           database=d["database"], autocommit=True)


def build_canary(conn):
    with connect(conn) as db, db.cursor() as c:
        for stmt in canary_sql().split(";"):
            if stmt.strip():
                c.execute(stmt)


def canary(lease):
    with connect(lease) as db, db.cursor() as c:
        c.execute("SELECT v FROM canary WHERE id = 1")
        return c.fetchone()[0]


def test_content_key_shared_vectors(tmp_path):
    """testdata/contentkey/vectors.json, which every client's tests check."""
    import json
    d = os.path.join(os.path.dirname(__file__), "..", "..", "..", "testdata", "contentkey")
    with open(os.path.join(d, "vectors.json"), encoding="utf-8") as f:
        vectors = json.load(f)["vectors"]
    assert vectors
    for i, v in enumerate(vectors):
        base = tmp_path / str(i)
        base.mkdir()
        for name, text in v["files"].items():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_bytes(text.encode())
        assert content_key([str(base / p) for p in v["patterns"]], v["extra"]) == v["key"], v["name"]


def test_content_key_matches_the_go_client(tmp_path):
    (tmp_path / "m" / "sub").mkdir(parents=True)
    (tmp_path / "m" / "001.sql").write_text("CREATE TABLE a (id INT);")
    (tmp_path / "m" / "sub" / "002.sql").write_text("CREATE TABLE b (id INT);")
    # The same files and extra string through client.ContentKey in Go.
    assert content_key([str(tmp_path / "m")], ["v1"]) == \
        "469c6fadcf0cdddd236881f69b788abcb1752e48af4ddca5907462d3e676630d"
    before = content_key([str(tmp_path / "m")])
    (tmp_path / "m" / "sub" / "002.sql").write_text("CREATE TABLE b (id BIGINT);")
    assert content_key([str(tmp_path / "m")]) != before
    with pytest.raises(ValueError, match="matches no file"):
        content_key([str(tmp_path / "nope")])


def test_build_once_across_threads_socket_and_tcp(daemon):
    tcp = Client(url="http://" + daemon.addr, token=daemon.token)
    with pytest.raises(PristineError) as e:
        Client(url="http://" + daemon.addr, token="wrong").health()
    assert e.value.status == 401
    builds = []
    hashes = []

    def go(c):
        def build(conn):
            builds.append(1)
            time.sleep(0.5)  # others arrive while this one builds
            build_canary(conn)
        t = ensure_template(c, "pyonce", "key-once", build, database="shop")
        ensure_pool(c, "pyonce", t["hash"], 2)
        hashes.append(t["hash"])

    threads = [threading.Thread(target=go, args=(c,)) for c in (daemon.client, tcp, daemon.client)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(builds) == 1
    assert len(hashes) == 3 and len(set(hashes)) == 1
    lease = tcp.lease("pyonce")
    assert lease.pid == os.getpid() and lease.database == "shop"
    assert canary(lease) == "pristine"
    with connect(lease) as db, db.cursor() as c:
        c.execute("UPDATE canary SET v = 'dirty'")
    tcp.release(lease.id, unchanged=True)  # the daemon sees the write and resets it
    again = [daemon.client.lease("pyonce") for _ in range(2)]
    assert [canary(l) for l in again] == ["pristine", "pristine"]
    for l in again:
        daemon.client.release(l.id)
    daemon.client.pool_down("pyonce")


def test_lease_connects_over_tcp_and_the_socket(daemon):
    """A lease's account is reachable over plain TCP, over TCP with the TLS
    the server offers (MySQL makes itself a certificate; PyMySQL takes it
    unverified when not asked to verify) and over the slot's socket; on
    MySQL it is a caching_sha2_password account, whose first login over
    plain TCP needs the server's RSA key (PyMySQL asks for it and encrypts
    with python3-cryptography)."""
    c = daemon.client
    t = ensure_template(c, "pyconn", "key-conn", build_canary)
    ensure_pool(c, "pyconn", t["hash"], 1)
    lease = c.lease("pyconn")
    try:
        with pymysql.connect(ssl_disabled=True, **lease.connect_kwargs()) as db, db.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert cur.fetchone()[1] == "", "ssl_disabled: plain TCP"
            cur.execute("SELECT v FROM canary")
            assert cur.fetchone()[0] == "pristine"
        with connect(lease) as db, db.cursor() as cur:
            cur.execute("SELECT v FROM canary")
            assert cur.fetchone()[0] == "pristine"
            cur.execute("SELECT VERSION(), CURRENT_USER()")
            version, tcp_user = cur.fetchone()
            cur.execute("SHOW CREATE USER CURRENT_USER()")
            create = cur.fetchone()[0]
        if "mariadb" not in version.lower():
            assert "caching_sha2_password" in create, f"the lease's account on MySQL {version} is not caching_sha2_password"
        assert lease.socket
        with pymysql.connect(unix_socket=lease.socket, user=lease.user, password=lease.password,
                             database=lease.database) as db, db.cursor() as cur:
            cur.execute("SELECT v, CURRENT_USER() FROM canary")
            assert cur.fetchone() == ("pristine", tcp_user)
        with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
            pymysql.connect(host=lease.host, port=lease.port, user=lease.user, password=lease.password + "x")
    finally:
        c.release(lease.id)
        c.pool_down("pyconn")


def test_faults_say_cause_and_fix(daemon, tmp_path):
    nobody = Client(socket=str(tmp_path / "pristine.sock"))
    with pytest.raises(NoDaemonError, match="no pristine daemon is running.*pristine serve"):
        nobody.health()
    c = daemon.client

    def bad(conn):
        run_command(sql_client() + """ -u"$MYSQL_USER" "$MYSQL_DATABASE" -e 'CREATE TABLE broken ('""", conn)

    with pytest.raises(TemplateBuildError, match="(?s)build failed, so it was aborted.*SQL syntax"):
        ensure_template(c, "pyfault", "key-fault", bad)
    # The aborted build leaves nothing behind: the next one builds.
    t = ensure_template(c, "pyfault", "key-fault", build_canary)
    assert t["status"] == "ready"
    ensure_pool(c, "pyfault", t["hash"], 1)
    held = c.lease("pyfault")
    with pytest.raises(PristineError) as e:
        c.lease("pyfault", wait=1)
    assert e.value.status == 503 and "pyfault" in str(e.value)
    # A TTL out of range is refused with 400 and the allowed range.
    with pytest.raises(PristineError) as e:
        c.lease("pyfault", ttl=1e300, wait=1)
    assert e.value.status == 400 and "604800" in str(e.value)
    c.release(held.id)
    with pytest.raises(PristineError) as e:
        c.release(held.id)
    assert e.value.status == 404 and "unknown lease" in str(e.value)
    c.pool_down("pyfault")


def test_killed_test_process_lease_is_reclaimed(daemon):
    t = ensure_template(daemon.client, "pykill", "key-kill", build_canary)
    ensure_pool(daemon.client, "pykill", t["hash"], 1)
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from pristine_client import Client
        l = Client(socket={daemon.client.socket!r}).lease("pykill", holder="doomed")
        print("LEASED", l.id, flush=True)
        time.sleep(120)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("LEASED "), line
        leases = daemon.client.leases()
        assert [(l["id"], l["pid"]) for l in leases] == [(line.split()[1], child.pid)]
        child.send_signal(signal.SIGKILL)
        child.wait()
        for _ in range(100):
            if not daemon.client.leases():
                break
            time.sleep(0.1)
        assert daemon.client.leases() == []
        assert daemon.client.pool("pykill")["stats"]["holder_gone"] == 1
        # The slot is usable again.
        l = daemon.client.lease("pykill", wait=30)
        assert canary(l) == "pristine"
        daemon.client.release(l.id)
    finally:
        child.kill()
        child.wait()
        daemon.client.pool_down("pykill")
