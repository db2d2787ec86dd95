# Helpers of scripts/install-deps.sh, sourced (scripts/scripts_test.go calls
# them one by one).

# debian_uri APT_DIR: the URI of the first configured Debian source whose
# suite is a release (not -security, -updates or -backports), from
# sources.list, sources.list.d/*.list and sources.list.d/*.sources (deb822).
# Prints nothing when there is none.
debian_uri() {
  local dir="${1:-/etc/apt}"
  local files=()
  [ -f "$dir/sources.list" ] && files+=("$dir/sources.list")
  for f in "$dir"/sources.list.d/*.list "$dir"/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 0
  awk '
    /^[ \t]*#/ { next }
    # one-line format: deb [opts] URI SUITE COMPONENTS...
    $1 == "deb" {
      i = 2
      if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      if ($(i+1) ~ /^[a-z]+$/ && $i ~ /debian/) { print $i; exit }
      next
    }
    # deb822: a stanza of Types/URIs/Suites lines, ended by a blank line
    /^Types:/  { types = $0 }
    /^URIs:/   { uri = $2 }
    /^Suites:/ { suites = $0 }
    /^[ \t]*$/ { if (check()) exit; types = uri = suites = "" }
    END        { if (!done) check() }
    function check() {
      if (types ~ /(^|[ \t])deb([ \t]|$)/ && uri ~ /debian/ && suites ~ /[ \t][a-z]+([ \t]|$)/) { print uri; done = 1; return 1 }
      return 0
    }
  ' "${files[@]}"
}

# has_suite APT_DIR SUITE: whether a configured source already offers SUITE.
has_suite() {
  local dir="$1" suite="$2"
  cat "$dir/sources.list" "$dir"/sources.list.d/*.list "$dir"/sources.list.d/*.sources 2>/dev/null |
    grep -v '^[[:space:]]*#' | grep -qw -- "$suite"
}

# apt_step WHAT apt-get ARGS...: runs apt-get, saying what it does and
# printing one line per package fetched and set up, instead of minutes of
# silence; the full output goes to a log, shown when apt-get fails.
apt_step() {
  local what="$1" log rc=0
  shift
  log="$(mktemp /tmp/pristine-apt-XXXXXX.log)"
  echo "install-deps: $what"
  (
    set -o pipefail
    "$@" 2>&1 | tee "$log" | awk '/^(Get:|Setting up )/ { print "install-deps:   " $0; fflush() }'
  ) || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "install-deps: failed ($*); its output:" >&2
    tail -40 "$log" >&2
    rm -f "$log"
    return "$rc"
  fi
  rm -f "$log"
}
