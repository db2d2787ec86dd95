# What podman run needs on this host, sourced by scripts/test-image.sh.
#
# pm: podman with what this host needs (PODMAN_HOST), and PODMAN_RUN_HOST:
# podman run's options for it. A host whose cgroups are v1 or a v1/v2
# hybrid (crun refuses it) runs containers with runc and cgroupfs; a root without CAP_SYS_RESOURCE (a container host of its own)
# cannot raise a container's open-file and process limits past its own,
# which podman's defaults ask for, so they are set to the host's.
PODMAN_HOST=()
PODMAN_RUN_HOST=()
if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
  command -v runc >/dev/null || { echo "podman: this host's cgroups are v1 or hybrid, which crun refuses: apt-get install runc" >&2; exit 1; }
  PODMAN_HOST+=(--runtime runc --cgroup-manager=cgroupfs)
fi
PODMAN_RUN_HOST+=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)")
nproc="$(ulimit -Hu)"
[ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
PODMAN_RUN_HOST+=(--ulimit "nproc=$nproc:$nproc")
pm() { podman "${PODMAN_HOST[@]}" "$@"; }
