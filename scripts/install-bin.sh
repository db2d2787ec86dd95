#!/usr/bin/env bash
# Puts the bin/pristine that scripts/build.sh made on PATH, so the README's
# `pristine ...` lines work as written: copies it to DIR (default
# $PRISTINE_BINDIR, else /usr/local/bin). Without the right to write there,
# it says so and where the binary is, and succeeds. PRISTINE_BIN: another
# binary to install.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${PRISTINE_BINDIR:-/usr/local/bin}}"
src="${PRISTINE_BIN:-bin/pristine}"
if [ -d "$dir" ] && [ -w "$dir" ]; then
  install -m 0755 "$src" "$dir/pristine.new"
  mv -f "$dir/pristine.new" "$dir/pristine"
  echo "install-bin: installed $dir/pristine ($("$dir/pristine" --version | head -1))" >&2
else
  echo "install-bin: cannot write $dir: run \"sudo install -m 0755 $PWD/bin/pristine $dir/\" to put pristine on PATH (or use $PWD/bin/pristine)" >&2
fi
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "install-bin: $dir is not on PATH: add it (export PATH=\"$dir:\$PATH\")" >&2 ;;
esac
