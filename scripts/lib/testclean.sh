# Cleanup of scripts/test.sh, sourced; it runs on every exit, failed or not.

# clean_test_leftovers STAMP [DIR [PROC]]: removes what the tests of this run left
# in DIR (default /dev/shm) when a test binary died before its cleanups
# (a timeout, a panic, Ctrl-C): the directories named pristine-*test-* made
# after STAMP (a file touched when the run began), after killing the
# servers whose data directories lie in them and unmounting what is mounted
# below them; and the empty data directory the tests share
# (pristine-test-base-*), a cache of this run only. It prints what it
# removed. While a Go test binary of another run is alive (one without
# PRISTINE_TEST_RUN=STAMP in its environment; test.sh exports it), it
# removes nothing and says so: two runs on one machine share /dev/shm, and
# a directory made after STAMP may be the other run's. PROC (default /proc)
# is where it looks for them.
clean_test_leftovers() {
  local stamp="$1" dir="${2:-/dev/shm}" d pids m others
  others="$(other_test_runs "$stamp" "${3:-/proc}")"
  others="${others% }"
  if [ -n "$others" ]; then
    echo "test.sh: another test run is running (test binaries $others): its directories and this run's in $dir are left alone" >&2
    return 0
  fi
  for d in "$dir"/pristine-*test-*; do
    [ -e "$d" ] || continue
    case "$d" in
      "$dir"/pristine-test-base-*) ;;
      *) [ "$d" -nt "$stamp" ] || continue ;;
    esac
    pids="$(pgrep -f -- "--datadir=$d/" || true)"
    if [ -n "$pids" ]; then
      echo "test.sh: killing servers left running in $d: $(echo $pids)" >&2
      kill -KILL $pids 2>/dev/null || true
      for _ in $(seq 50); do pgrep -f -- "--datadir=$d/" >/dev/null || break; sleep 0.1; done
    fi
    # Deepest first.
    for m in $(awk -v d="$d/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
      echo "test.sh: unmounting $m" >&2
      umount -l "$m" 2>/dev/null || true
    done
    echo "test.sh: removing $d ($(du -sh "$d" 2>/dev/null | cut -f1))" >&2
    rm -rf "$d"
  done
}

# other_test_runs STAMP PROC: the PIDs of the live Go test binaries (an
# executable named *.test) that do not carry PRISTINE_TEST_RUN=STAMP.
other_test_runs() {
  local stamp="$1" proc="$2" p exe
  for p in "$proc"/[0-9]*; do
    exe="$(readlink "$p/exe" 2>/dev/null)" || continue
    case "$exe" in *.test) ;; *) continue ;; esac
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qxF "PRISTINE_TEST_RUN=$stamp" && continue
    printf '%s ' "${p#"$proc"/}"
  done
}
