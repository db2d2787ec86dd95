"""The build-once flow every integration shares: make sure a template
exists (building it in exactly one process), and that a pool of it is up."""

import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, Optional

from .client import Client, NoDaemonError, PristineError

BuildFn = Callable[[Dict[str, Any]], None]

#: The environment variable naming the fleet cache every integration uses
#: when none is given in code.
CACHE_ENV = "PRISTINE_CACHE"


def ensure_template(client: Client, name: str, key: str, build: Optional[BuildFn],
                    database: Optional[str] = None, wait: float = 1800,
                    cache: Optional[str] = None, key_files: Optional[int] = None,
                    allow_stale: bool = False) -> Dict[str, Any]:
    """Return the template answer (status "ready", with its "hash") of the
    template keyed by key, building it with build(conn) when nobody has.

    conn is the daemon's answer: host, port, socket, user, password,
    database, dsn, url and env (a list of NAME=VALUE for a migration
    command). Across processes exactly one caller builds a key; the others
    wait. A build that raises is aborted and the error raised again.

    cache (default $PRISTINE_CACHE) names an OCI repository a fleet of
    machines shares: the template is pulled from it when another machine
    built it, and pushed to it when this caller builds (docs/fleet.md).

    key_files is how many file paths (files, directories, globs) key is a
    content_key of. Given with a build, the daemon refuses a build that
    no file keys (PristineError.code UNKEYED_BUILD): its template would
    stay the same after a migration changes. allow_stale accepts that
    risk."""
    deadline = time.monotonic() + wait
    if cache is None:
        cache = os.environ.get(CACHE_ENV) or None
    while True:
        a = client.begin_template(name, key, database=database, cache=cache,
                                  key_files=key_files if build is not None else None, allow_stale=allow_stale)
        status = a.get("status")
        if status == "ready":
            return a
        if status == "build":
            return _build(client, name, a, build)
        # Someone else builds it: wait, then begin again (it is ready, or
        # its builder failed and this caller tries).
        while status == "building":
            left = deadline - time.monotonic()
            if left <= 0:
                raise PristineError(f"template {name}: another process has been building it for longer than "
                                    f"{wait:.0f}s: see its output, or `pristine template ls`")
            try:
                a = client.wait_template(key, min(left, 30))
            except PristineError as e:
                if e.status == 404:
                    break  # the builder aborted
                raise
            status = a.get("status")
            if status == "ready":
                return a


def _build(client: Client, name: str, a: Dict[str, Any], build: Optional[BuildFn]) -> Dict[str, Any]:
    if build is None:
        client.abort_template(a["hash"])
        raise PristineError(f"template {name}: it does not exist and nothing was given to build it")
    try:
        build(a)
    except BaseException as e:
        try:
            client.abort_template(a["hash"])
        except PristineError:
            pass
        if isinstance(e, Exception):
            raise TemplateBuildError(f"template {name}: build failed, so it was aborted: {e}") from e
        raise
    return client.finish_template(a["hash"])


class TemplateBuildError(PristineError):
    """The user's migrations or fixtures failed against the template server."""


def ensure_pool(client: Client, name: str, hash: str, size: int) -> None:
    """Make sure a pool of template hash is up with at least size slots:
    bring one of size slots up when none is, and grow a smaller one to size
    (at once: the new slots start in the background and leases wait for
    them; a notice goes to stderr). Growth beyond the daemon's
    --max-memory/--max-disk fails at once with the daemon's message, which
    names the limit. A pool of the same name built from other files is
    replaced when nobody holds a lease on it, and refused otherwise. A new
    pool is back as soon as its first slot answers (the others start in the
    daemon), and a pool a peer is bringing up right now counts as up: the
    lease that follows waits in the daemon for its first slot."""
    try:
        st = client.pool(name)
    except NoDaemonError:
        raise
    except PristineError as e:
        if e.status == 503:
            return  # a peer's pool up is making the pool: the lease waits for it
        if e.status != 404:
            raise
        st = None
    if st is not None:
        if st.get("hash") == hash:
            if st.get("size", 0) < size:
                _grow_pool(client, name, hash, st.get("size", 0), size)
            return
        if st.get("leased", 0) > 0:
            raise PristineError(f"pool {name}: a pool of an older build of this template is up with "
                                f"{st['leased']} leases: let its tests end, or run `pristine pool down --template {name}`")
        client.pool_down(name)
    try:
        client.pool_up(hash, max(size, 1), min_ready=1)  # the first slot is enough: the lease takes it
    except PristineError as e:
        if e.status != 409:  # 409: a peer brought it up first
            raise PristineError(f"pool {name}: {e}", e.status) from e


def _grow_pool(client: Client, name: str, hash: str, have: int, size: int) -> None:
    try:
        st = client.pool_up(hash, size)
    except PristineError as e:
        if e.status == 409:  # a peer grew it first
            return
        raise PristineError(f"pool {name}: grow it from {have} to {size} slots: {e}", e.status) from e
    print(f"pristine: pool {name} had {have} slots, this run needs {size}: grew it to {st.get('size', size)} "
          "(the extra slots go again after the daemon's --shrink-after idle)", file=sys.stderr)


def run_command(command: str, conn: Dict[str, Any], cwd: Optional[str] = None) -> None:
    """Run a shell command (migrations, a schema load) against the template
    server conn describes: it sees DATABASE_URL, MYSQL_HOST, MYSQL_PORT (and
    MYSQL_TCP_PORT, which the mariadb client reads), MYSQL_UNIX_PORT,
    MYSQL_USER, MYSQL_PWD and MYSQL_DATABASE, so
    `mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE" < schema.sql` works."""
    env = dict(os.environ)
    env.update(dict(e.split("=", 1) for e in conn.get("env") or []))
    # The mariadb and mysql clients read the port from MYSQL_TCP_PORT.
    if "MYSQL_PORT" in env:
        env.setdefault("MYSQL_TCP_PORT", env["MYSQL_PORT"])
    p = subprocess.run(command, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        out = p.stdout.decode(errors="replace").strip()
        raise RuntimeError(f"`{command}` exited with status {p.returncode}: {out[-2000:]}")
