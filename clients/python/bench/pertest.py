"""What a database of its own costs a test, with the Python client.

Runs N tests one after another, each with a database of its own, as the
pytest plugin hands them out (a Prefetcher: the lease and the PyMySQL
connection taken ahead while the previous test ran, the release in the
background), then the same N tests on one database they share, in the
same run, and prints a table row: the medians of the lease (with its
connection: the take), the connection opened on the test's thread when
none was ready, and the release, their sum (the overhead on the test's
thread), the median test on each side and their ratio. Pass --no-prefetch
to lease, connect and release on the test's thread instead, and --work-ms W
to have each test work W ms after its query (a sleep), on both sides. The
template "pertest" and its pool come from `pristine-bench pertest`
(scripts/bench-pertest.sh runs both)."""

import statistics
import sys
import time

import pymysql

from pristine_client import Client
from pristine_client.prefetch import Prefetcher

QUERY = "SELECT COUNT(*) FROM item WHERE name LIKE 'item 1%'"


def ms(t0, t1):
    return (t1 - t0) * 1000


def connect(lease):
    return pymysql.connect(**lease.pymysql_kwargs())


def main(n=200, ahead=True, work_ms=0.0):
    c = Client.from_env()
    shared = c.lease(template="pertest", holder="bench-pertest python (shared)")
    conn = connect(shared)
    shared_t = []
    for _ in range(n):
        t0 = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute(QUERY)
            cur.fetchall()
        time.sleep(work_ms / 1000)
        shared_t.append(ms(t0, time.perf_counter()))
    conn.close()
    c.release(shared.id)
    # Without prefetch the test connects itself: the connect has a column of its own.
    p = Prefetcher(c, "pertest", holder="bench-pertest python", connect=connect if ahead else None, ahead=ahead)
    p.warm()
    lease_t, connect_t, release_t, over_t, own_t = [], [], [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        l, conn = p.take()
        t1 = time.perf_counter()
        if conn is None:
            conn = connect(l)
        t2 = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute(QUERY)
            cur.fetchall()
        time.sleep(work_ms / 1000)
        t3 = time.perf_counter()
        conn.close()
        p.release(l.id, unchanged=True)
        t4 = time.perf_counter()
        lease_t.append(ms(t0, t1))
        connect_t.append(ms(t1, t2))
        release_t.append(ms(t3, t4))
        over_t.append(ms(t0, t2) + ms(t3, t4))
        own_t.append(ms(t0, t4))
    errors = p.close()
    if errors:
        sys.exit("bench-pertest python: " + "; ".join(errors))
    med = statistics.median
    name = "Python" if ahead else "Python, no prefetch"
    if work_ms:
        name += f", {work_ms:g} ms of work"
    print(f"| {name} | {n} | {med(lease_t):.2f} / {med(connect_t):.2f} / {med(release_t):.2f} ms | {med(over_t):.2f} ms "
          f"| {med(own_t):.2f} / {med(shared_t):.2f} ms | {med(own_t) / med(shared_t):.1f}x |")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="what a database of its own costs a test, with the Python client")
    ap.add_argument("n", nargs="?", type=int, default=200, help="tests on each side (default 200)")
    ap.add_argument("--no-prefetch", action="store_true", help="lease, connect and release on the test's thread")
    ap.add_argument("--work-ms", type=float, default=0, help="how long each test works after its query (a sleep)")
    a = ap.parse_args()
    main(a.n, ahead=not a.no_prefetch, work_ms=a.work_ms)
