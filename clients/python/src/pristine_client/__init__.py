"""pristine-client: a pristine MariaDB database per test, from a pristine daemon.

    from pristine_client import Client, content_key, ensure_template, ensure_pool

    c = Client.from_env()
    t = ensure_template(c, "app", content_key(["migrations"]), build=lambda conn: migrate(conn["url"]), key_files=1)
    ensure_pool(c, "app", t["hash"], size=4)
    lease = c.lease("app")
    ...
    c.release(lease.id)

The pytest plugin (pristine_client.pytest_plugin, loaded automatically)
gives fixtures; pristine_client.django is a database backend for Django's
test runner.
"""

from .client import UNKEYED_BUILD, Client, Lease, NoDaemonError, PristineError, default_root
from .ensure import TemplateBuildError, ensure_pool, ensure_template, run_command
from .key import content_key

__all__ = ["Client", "Lease", "NoDaemonError", "PristineError", "TemplateBuildError", "UNKEYED_BUILD", "content_key",
           "default_root", "ensure_pool", "ensure_template", "run_command"]
