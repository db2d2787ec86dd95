"""A pool node's slots with TLS (`pristine serve --slot-tls`, what a
non-loopback --slot-address turns on): the lease carries the CA, and
connect_kwargs() connects with TLS verified against it and the host name."""

import ssl

import pymysql
import pytest

from pristine_client import ensure_pool, ensure_template

from conftest import running_daemon
from test_client import build_canary


@pytest.fixture(scope="module")
def tls_daemon(binary):
    with running_daemon(binary, args=("--slot-tls",)) as d:
        yield d


def test_lease_connects_with_verified_tls(tls_daemon):
    c = tls_daemon.client
    t = ensure_template(c, "pytls", "key-tls", build_canary)
    ensure_pool(c, "pytls", t["hash"], 1)
    lease = c.lease("pytls", ttl=60)
    try:
        assert "BEGIN CERTIFICATE" in lease.ca and lease.host == "127.0.0.1"
        kw = lease.connect_kwargs()
        assert kw["ssl_ca"] == lease.ca_file() and kw["ssl_verify_identity"]
        with pymysql.connect(**kw) as db, db.cursor() as cur:
            cur.execute("SELECT v FROM canary")
            assert cur.fetchone()[0] == "pristine"
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert cur.fetchone()[1], "the connection is not TLS"
        # Refused: without TLS (REQUIRE SSL), and with TLS expecting a host
        # name the certificate does not carry (127.1: the same address).
        plain = {k: v for k, v in kw.items() if not k.startswith("ssl")}
        with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
            pymysql.connect(**plain, ssl_disabled=True)
        with pytest.raises(pymysql.err.OperationalError) as e:
            pymysql.connect(**dict(kw, host="127.1"))  # a name the certificate lacks, no /etc/hosts needed
        assert isinstance(e.value.__cause__ or e.value.__context__, ssl.SSLCertVerificationError) or \
            "certificate" in str(e.value), e.value
        assert "--ssl-verify-server-cert" in lease.mysql_command()
        # The fast kwargs drop TLS for a loopback lease only: this one keeps it.
        assert lease.pymysql_kwargs() == kw
    finally:
        c.release(lease.id)
