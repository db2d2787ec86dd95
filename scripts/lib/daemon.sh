# Helpers of the scripts that run a daemon of their own (sourced).

# stop_daemon BIN ROOT PID [SECONDS]: stops the `pristine serve` of ROOT
# started as PID, and never waits forever. It asks the daemon to bring its
# pools down (`pristine pool down --all`); if the process has not exited
# after SECONDS (default 60), it sends SIGTERM, then SIGKILL; last, it kills
# any server still running on a data directory under ROOT, so nothing the
# script started outlives it.
stop_daemon() {
  local bin="$1" root="$2" pid="$3" secs="${4:-60}" i
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    timeout "$secs" "$bin" --root "$root" pool down --all >/dev/null 2>&1 || true
    for ((i = 0; i < secs * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "stop_daemon: the daemon (pid $pid) did not stop in ${secs}s; sending SIGTERM" >&2
      kill -TERM "$pid" 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  fi
  # Servers of this root only: their --datadir lies under it.
  local left
  left="$(pgrep -f -- "--datadir=$root/" || true)"
  if [ -n "$left" ]; then
    echo "stop_daemon: killing servers left running under $root: $(echo $left)" >&2
    kill -KILL $left 2>/dev/null || true
  fi
}
