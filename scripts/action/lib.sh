# Helpers of the action's steps (action.yml), sourced.

die() { echo "::error::pristine action: $*" >&2; exit 1; }

# as_root CMD...: CMD as root (sudo on a runner that is not root).
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# build_flags: the flags of `pristine template build` and `template key`
# from the action's inputs, in the array flags.
build_flags() {
  flags=()
  if [ -n "${PRISTINE_FROM_SQL:-}" ]; then flags+=(--from-sql "$PRISTINE_FROM_SQL"); fi
  if [ -n "${PRISTINE_INIT_CMD:-}" ]; then flags+=(--init-cmd "$PRISTINE_INIT_CMD"); fi
  local w
  for w in ${PRISTINE_WATCH:-}; do flags+=(--watch "$w"); done
  [ ${#flags[@]} -gt 0 ] || die "give the template from-sql, init-cmd or both"
}
