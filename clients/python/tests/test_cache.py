"""ensure_template with a fleet cache, through real daemons and a real
OCI registry: two machines of a fleet build a template once."""

import pytest

from pristine_client import PristineError, ensure_template

from conftest import running_daemon
from test_client import build_canary, canary


def test_fleet_cache_builds_once_across_daemons(binary, registry, monkeypatch):
    allow = {"PRISTINE_ALLOW_CACHE": f"http://{registry}/fleet"}
    builds = []

    def build(conn):
        builds.append(conn["hash"])
        build_canary(conn)

    with running_daemon(binary, allow) as first, running_daemon(binary, allow) as second:
        a = ensure_template(first.client, "pycache", "py-key-1", build, database="shop",
                            cache=f"{registry}/fleet/templates")
        assert a["status"] == "ready" and len(builds) == 1

        # The second machine gets it from the registry; $PRISTINE_CACHE is
        # the cache when the code names none.
        monkeypatch.setenv("PRISTINE_CACHE", f"{registry}/fleet/templates")

        def must_not_build(conn):
            raise AssertionError("the second daemon built a template its fleet's cache holds")

        b = ensure_template(second.client, "pycache", "py-key-1", must_not_build, database="shop")
        assert b["hash"] == a["hash"]
        second.client.pool_up("pycache", 1)
        lease = second.client.lease("pycache")
        assert canary(lease) == "pristine"
        second.client.release(lease.id)

    # A daemon that does not allow the repository says how to allow it.
    with running_daemon(binary) as third:
        with pytest.raises(PristineError) as e:
            ensure_template(third.client, "pycache", "py-key-1", build, database="shop")
        assert e.value.status == 403
        assert f"--allow-cache {registry}/fleet/templates" in str(e.value)
