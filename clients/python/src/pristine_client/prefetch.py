"""Leases taken ahead of need, and releases off the test's thread.

A test that asks a Prefetcher for a database finds one leased already (and,
given a connect function, a connection to it open already): the lease
round trip and the connection's handshake ran in a background thread
while the previous test ran. Its release runs in the background too: the
daemon answers a release before its "unchanged" check, and the test does
not wait for that answer either. close() (the session's end) waits for
every release still in flight and releases the lease taken ahead that no
test used.

The cost: one lease more held per Prefetcher (per process) while tests
run; it holds a slot of the pool like any other lease. A lease taken ahead
is held by this process: if the process dies (kill -9, a crashed worker)
before close(), the daemon reclaims it when it notices the process gone.
"""

import atexit
import os
import queue
import threading
import time
import weakref
from concurrent.futures import Future
from concurrent.futures import wait as wait_all
from typing import Any, Callable, List, Optional, Tuple

from .client import Client, Lease, PristineError


#: The longest a lease taken ahead waits in one request for a free slot.
AHEAD_WAIT = 1.0


class _Worker:
    """One daemon thread (one that never holds the interpreter's exit: a
    lease waiting for a free slot must not delay Ctrl-C) that runs what it
    is given, in order, each with a future of its result. Handing it work
    costs the caller a queue's put: a thread started per piece of work
    made the caller wait for the new thread to start and run up to its
    first blocking call, on the interpreter's lock. A forked child starts
    a thread of its own."""

    def __init__(self, name: str):
        self._name = name
        self._lock = threading.Lock()
        self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
        self._pid = 0

    def submit(self, fn: Callable[[], Any]) -> Future:
        f: Future = Future()
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._queue = queue.SimpleQueue()
                threading.Thread(target=self._run, args=(self._queue,), daemon=True, name=self._name).start()
            self._queue.put((fn, f))
        return f

    @staticmethod
    def _run(q: "queue.SimpleQueue") -> None:
        while True:
            fn, f = q.get()
            try:
                f.set_result(fn())
            except BaseException as e:  # handed to whoever takes the result
                f.set_exception(e)


class Prefetcher:
    """Takes the next lease of one template while the current one is in use.

    Prefetcher(client, "app", holder="pytest prefetch", wait=60) holds at
    most one lease ahead. take() returns it (or leases one now when none
    was taken ahead, or taking it failed: the error is then the current
    one) with the connection connect(lease) opened to it, and starts taking
    the next. release() returns a lease in the background. Safe to use from
    several threads: the first to ask gets the lease taken ahead, the
    others lease as usual.
    """

    def __init__(self, client: Client, template: str, holder: str = "", wait: float = 60,
                 pid: Optional[int] = None, connect: Optional[Callable[[Lease], Any]] = None,
                 ahead: bool = True):
        self.client = client
        # ahead False: no lease is taken ahead (take() leases on the
        # caller's thread); releases still run in the background.
        self.ahead = ahead
        self.template = template
        self.holder = holder
        self.wait = wait
        self.pid = pid
        self.connect = connect
        self._lock = threading.Lock()
        self._next: Optional[Future] = None
        self._closed = False
        self._releases: set = set()
        self._errors: List[str] = []
        # The lease taken ahead and the releases each have a thread: a
        # lease that waits for a free slot never holds up the release that
        # frees one.
        self._ahead_worker = _Worker("pristine-prefetch")
        self._release_worker = _Worker("pristine-release")
        # The interpreter's exit (a run stopped early, a script without
        # close()) still returns what is held; the daemon's reclaim of an
        # exited holder backs this up for a kill.
        ref = weakref.ref(self)
        atexit.register(lambda: ref() is not None and ref().close(timeout=10))

    def _lease(self, ahead: bool = False) -> Tuple[Lease, Any]:
        if ahead:
            lease = self._lease_ahead()
        else:
            lease = self.client.lease(self.template, holder=self.holder, wait=self.wait, pid=self.pid)
        conn = None
        if self.connect is not None:
            try:
                conn = self.connect(lease)
            except Exception:
                conn = None  # the test connects itself, for the error of its own attempt
        return lease, conn

    def _lease_ahead(self) -> Lease:
        """A lease taken in the background: asked for in waits of at most
        AHEAD_WAIT seconds, so that close() never waits long for one (the
        pool was full) and nothing comes after it."""
        deadline = time.monotonic() + self.wait
        while True:
            if self._closed:
                raise PristineError("pristine: the prefetcher was closed")
            try:
                return self.client.lease(self.template, holder=self.holder, pid=self.pid,
                                         wait=max(min(AHEAD_WAIT, deadline - time.monotonic()), 0.001))
            except PristineError as e:
                if e.status != 503 or time.monotonic() >= deadline:
                    raise

    def warm(self) -> None:
        """Starts taking a lease ahead now, if none is."""
        with self._lock:
            if self.ahead and self._next is None and not self._closed:
                self._next = self._ahead_worker.submit(lambda: self._lease(ahead=True))

    def take(self) -> Tuple[Lease, Any]:
        """The lease taken ahead and its connection (None without a connect
        function), or a lease taken now; starts taking the next."""
        with self._lock:
            f, self._next = self._next, None
        got = None
        if f is not None:
            try:
                got = f.result(timeout=self.wait + 60)
            except Exception:
                got = None  # leased again below, for the current error
        if got is None:
            got = self._lease()
        self.warm()
        return got

    def lease(self) -> Lease:
        """take() without a connection: the lease taken ahead, or one now."""
        lease, conn = self.take()
        _close(conn)
        return lease

    def release(self, lease_id: str, unchanged: bool = False) -> None:
        """Returns a lease in the background; close() waits for it. An error
        (other than the lease being gone already) is reported by close()."""
        def run():
            try:
                self.client.release(lease_id, unchanged=unchanged)
            except PristineError as e:
                if e.status not in (404, 410):
                    with self._lock:
                        self._errors.append(f"release {lease_id}: {e}")
        f = self._release_worker.submit(run)
        with self._lock:
            self._releases.add(f)
        f.add_done_callback(lambda done: self._forget(done))

    def _forget(self, f: Future) -> None:
        with self._lock:
            self._releases.discard(f)

    def close(self, timeout: float = 60) -> List[str]:
        """Takes no more leases, waits (up to timeout seconds) for the
        releases in flight and releases the lease taken ahead; returns the
        errors of releases that failed. A lease still being taken (the pool
        was full) asks no longer than AHEAD_WAIT seconds more; it is waited
        for and released."""
        with self._lock:
            f, self._next, self._closed = self._next, None, True
            pending = list(self._releases)
        # A lease being taken ends within AHEAD_WAIT seconds (it asks no
        # longer, and no more once closed); released when it comes.
        if pending:
            wait_all(pending, timeout=timeout)
        if f is not None:
            wait_all([f], timeout=min(timeout, AHEAD_WAIT + 5))
            f.add_done_callback(self._drop)  # runs at once when done
        with self._lock:
            errors, self._errors = self._errors, []
            late = len(self._releases)
        if late:
            errors.append(f"{late} release(s) did not finish within {timeout:.0f}s: the daemon reclaims "
                          "their leases when this process exits")
        return errors

    def _drop(self, f: Future) -> None:
        try:
            lease, conn = f.result()
        except Exception:
            return
        _close(conn)
        try:
            self.client.release(lease.id, unchanged=True)
        except PristineError:
            pass  # gone already, or the daemon reclaims it when this process exits


def _close(conn: Any) -> None:
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass
