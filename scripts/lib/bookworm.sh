# A Debian 12 (bookworm) minbase root as a tarball, sourced by
# scripts/test-deb.sh and scripts/build-image.sh.

# bookworm_tar CACHE: prints the path of CACHE/bookworm-minbase.tar, made
# by debootstrap --variant=minbase from the machine's Debian mirror the
# first time (a few minutes) and reused after. Its apt source is that
# mirror. Needs root and debootstrap; the caller's log and die functions
# report.
bookworm_tar() {
  local cache="$1" mirror b
  if [ ! -f "$cache/bookworm-minbase.tar" ]; then
    mirror="$(debian_uri /etc/apt)"
    mirror="${mirror:-http://deb.debian.org/debian}"
    log "debootstrap bookworm (minbase) from $mirror, cached in $cache" >&2
    mkdir -p "$cache"
    b="$(mktemp -d "$cache/.build.XXXXXX")"
    debootstrap --variant=minbase bookworm "$b" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
      { tail -20 "$cache/debootstrap.log" >&2; rm -rf --one-file-system "$b"; die "debootstrap failed: see $cache/debootstrap.log"; }
    echo "deb $mirror bookworm main" >"$b/etc/apt/sources.list"
    tar -C "$b" -cf "$cache/bookworm-minbase.tar.tmp" . && mv "$cache/bookworm-minbase.tar.tmp" "$cache/bookworm-minbase.tar"
    rm -rf --one-file-system "$b"
  fi
  echo "$cache/bookworm-minbase.tar"
}

# copy_apt_conf DIR: the machine's apt settings (proxies, mirrors' options)
# into DIR/etc/apt, so that apt in a root reaches what the machine's apt
# reaches. Docker's and PackageKit's own settings stay out.
copy_apt_conf() {
  local dir="$1" f
  mkdir -p "$dir/etc/apt/apt.conf.d"
  for f in /etc/apt/apt.conf.d/*; do
    case "$(basename "$f")" in docker-*|20packagekit|50appstream|01autoremove|02autoremove-*) ;; *) cp "$f" "$dir/etc/apt/apt.conf.d/" ;; esac
  done
  if [ -f /etc/apt/apt.conf ]; then cp /etc/apt/apt.conf "$dir/etc/apt/"; fi
}

# package_deb NAME [DEB]: prints DEB, or when none is given builds this
# machine's architecture's package (scripts/release.sh, no client
# packages; its output in /tmp/pristine-NAME-release.log) and prints its
# path: the package test-deb.sh and build-image.sh install in that root.
package_deb() {
  local name="$1" deb="${2:-}" arch
  if [ -z "$deb" ]; then
    arch="$(dpkg --print-architecture)"
    log "building the package (scripts/release.sh, $arch only)" >&2
    RELEASE_ARCHES="$arch" RELEASE_CLIENTS=0 bash scripts/release.sh >"/tmp/pristine-$name-release.log" 2>&1 ||
      { tail -20 "/tmp/pristine-$name-release.log" >&2; die "scripts/release.sh failed"; }
    deb="$(ls dist/pristine_*_"$arch".deb)"
  fi
  [ -f "$deb" ] || die "no package at $deb"
  echo "$deb"
}
