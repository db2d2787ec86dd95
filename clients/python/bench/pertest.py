"""What a database of its own costs a test, with the Python client.

Runs N tests one after another, each leasing a database of its own (lease,
PyMySQL connect, its query, close, release unchanged), then the same N tests
on one database they share, in the same run, and prints a table row: the
medians of the lease, the connection and the release, their sum (the
overhead on the test's thread), the median test on each side and their
ratio. The template "pertest" and its pool come from `pristine-bench
pertest` (scripts/bench-pertest.sh runs both)."""

import statistics
import sys
import time

import pymysql

from pristine_client import Client

QUERY = "SELECT COUNT(*) FROM item WHERE name LIKE 'item 1%'"


def ms(t0, t1):
    return (t1 - t0) * 1000


def main(n=200):
    c = Client.from_env()
    shared = c.lease(template="pertest", holder="bench-pertest python (shared)")
    conn = pymysql.connect(**shared.connect_kwargs())
    shared_t = []
    for _ in range(n):
        t0 = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute(QUERY)
            cur.fetchall()
        shared_t.append(ms(t0, time.perf_counter()))
    conn.close()
    c.release(shared.id)
    lease_t, connect_t, release_t, over_t, own_t = [], [], [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        l = c.lease(template="pertest", holder="bench-pertest python")
        t1 = time.perf_counter()
        conn = pymysql.connect(**l.connect_kwargs())
        t2 = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute(QUERY)
            cur.fetchall()
        t3 = time.perf_counter()
        conn.close()
        c.release(l.id, unchanged=True)
        t4 = time.perf_counter()
        lease_t.append(ms(t0, t1))
        connect_t.append(ms(t1, t2))
        release_t.append(ms(t3, t4))
        over_t.append(ms(t0, t2) + ms(t3, t4))
        own_t.append(ms(t0, t4))
    med = statistics.median
    print(f"| Python | {n} | {med(lease_t):.2f} / {med(connect_t):.2f} / {med(release_t):.2f} ms | {med(over_t):.2f} ms "
          f"| {med(own_t):.2f} / {med(shared_t):.2f} ms | {med(own_t) / med(shared_t):.1f}x |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
