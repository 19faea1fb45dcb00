#!/bin/sh
# Entry point of the worker images: prepares the container's cgroup for
# the sandbox, then becomes kb-worker.
#
# The sandbox gives every run a cgroup of its own below the worker's
# (pids.max, a memory limit without swap, cgroup.kill). Inside a container
# on a cgroup v2 host the worker's cgroup is the root of its cgroup
# namespace, mounted at /sys/fs/cgroup -- read-only, unless the container
# is privileged. A worker that holds CAP_SYS_ADMIN (which the sandbox
# needs anyway) may remount its own view read-write: the cgroup namespace
# keeps it inside the container's cgroup, whose limits the kubelet set.
# If that is refused, the worker still isolates runs, with RLIMIT_NPROC on
# a per-run uid instead of pids.max and only the pod's memory limit; it
# logs what it has at startup ("sandbox: isolate=... cgroup=...").
#
# exec, not a child: kb-worker must be PID 1 so that it receives SIGTERM
# from the kubelet directly (it drains), and it must be the only process
# in the container's cgroup, because cgroup v2 hands controllers to child
# cgroups only from a cgroup without processes of its own (the worker moves
# itself into <cgroup>/kb-worker for that; see worker/sandbox/sandbox_cgroup.c).
set -eu

cg=/sys/fs/cgroup
if [ -z "${KB_SANDBOX_CGROUP:-}" ]; then
	# Field 5 of mountinfo is the mount point, field 6 its options; the
	# last line for a mount point is the mount on top.
	opts=$(awk -v m="$cg" '$5 == m { o = $6 } END { print o }' /proc/self/mountinfo)
	fstype=$(stat -fc %T "$cg" 2>/dev/null || true)
	case ",$opts," in
	*,ro,*)
		if [ "$fstype" = cgroup2fs ]; then
			if mount -o remount,rw "$cg" 2>/dev/null; then
				echo "kb-worker-entrypoint: remounted $cg read-write for per-run cgroups" >&2
			else
				echo "kb-worker-entrypoint: $cg is read-only and cannot be remounted" \
					"(needs CAP_SYS_ADMIN and no AppArmor mount rule); runs get no" \
					"cgroup of their own" >&2
			fi
		fi
		;;
	esac
fi

exec /usr/local/bin/kb-worker "$@"
