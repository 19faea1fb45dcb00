/* sandbox_probe: what isolation this host allows, found once per process.
 *
 * Modes:
 *   root    the worker has CAP_SYS_ADMIN (root on the host, or a privileged
 *           container): plain namespaces, and each run gets its own real
 *           unprivileged uid/gid from a slot range (sandbox_isolate.c).
 *   userns  no CAP_SYS_ADMIN but unprivileged user namespaces work (a
 *           developer's laptop): the same namespaces inside a user
 *           namespace; the program runs as the worker's own uid, seen as an
 *           unprivileged uid inside. The process limit is the pids cgroup,
 *           else RLIMIT_NPROC, which counts per user namespace since 5.14
 *           (before, it would count all the worker's processes: refused).
 *   none    neither: isolated runs fail as infra errors.
 *
 * This file finds the mode, seccomp and cgroups and writes the summary;
 * kb_sandbox_probe() (kb_sandbox.c, the owner of runs) remembers the answer
 * and, in between, runs /bin/true through the whole isolated path (mounts,
 * pivot_root, proc, identity, seccomp, cgroup); only if that works is
 * isolation declared available.
 */
#include "kb_sandbox.h"
#include "sandbox_internal.h"

#include "kb_log.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

/* Can a child be created with these namespace flags? */
static int try_clone(unsigned long flags)
{
	pid_t pid =
		(pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(0);
	while (waitpid(pid, &st, __WALL) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int have_cap_sys_admin(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	unsigned long long eff = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> 21) & 1; /* CAP_SYS_ADMIN */
}

/* Since Linux 5.14 RLIMIT_NPROC is counted per user namespace, so in a
 * fresh one it counts only the run's processes. */
static int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int a = 0, b = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &a, &b) != 2)
		return 0;
	return a > major || (a == major && b >= minor);
}

void kb__sb_probe_host(struct kb_sandbox_caps *c, struct kb__sb_host *h)
{
	const unsigned long ns = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
				 CLONE_NEWIPC | CLONE_NEWUTS;
	char sc[160] = "ok";
	int nproc_ok = 0; /* RLIMIT_NPROC counts only the run's processes */

	memset(c, 0, sizeof(*c));
	memset(h, 0, sizeof(*h));

	int admin = have_cap_sys_admin();
	int ns_rc = admin ? try_clone(ns) : -EPERM;
	int userns_rc = try_clone(ns | CLONE_NEWUSER);
	h->ns_rc = ns_rc;
	h->userns_rc = userns_rc;
	if (admin && ns_rc == 0) {
		snprintf(c->mode, sizeof(c->mode), "root");
		c->features |= KB_SANDBOX_NS | KB_SANDBOX_UID |
			       KB_SANDBOX_NPROC;
		nproc_ok = 1; /* each run has a uid of its own */
	} else if (userns_rc == 0) {
		snprintf(c->mode, sizeof(c->mode), "userns");
		nproc_ok = kernel_at_least(5, 14);
		c->features |= KB_SANDBOX_NS | KB_SANDBOX_USERNS |
			       (nproc_ok ? KB_SANDBOX_NPROC : 0);
	} else {
		snprintf(c->mode, sizeof(c->mode), "none");
		snprintf(
			c->why, sizeof(c->why),
			"cannot create namespaces (as %s: %s; user namespace: %s)",
			admin ? "CAP_SYS_ADMIN" : "unprivileged",
			strerror(-(admin ? ns_rc : -EPERM)),
			strerror(-userns_rc));
	}

	const struct sock_filter *prog;
	unsigned short len;
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
		snprintf(sc, sizeof(sc), "kernel lacks seccomp");
	else if (kb__sb_seccomp_program(&prog, &len, sc, sizeof(sc)) == 0)
		c->features |= KB_SANDBOX_SECCOMP;
	if (!(c->features & KB_SANDBOX_SECCOMP) && !c->why[0])
		snprintf(c->why, sizeof(c->why), "seccomp unavailable: %s", sc);

	kb__sb_cgroup_init(h->cg, sizeof(h->cg), &h->cgf);
	c->features |= h->cgf;
	snprintf(c->cgroup, sizeof(c->cgroup), "%s",
		 strncmp(h->cg, "v2", 2) == 0   ? "v2"
		 : strncmp(h->cg, "v1", 2) == 0 ? "v1"
						: "none");
	if (!strcmp(c->mode, "userns") && !(h->cgf & KB_SANDBOX_CG_PIDS) &&
	    !nproc_ok && !c->why[0])
		snprintf(
			c->why, sizeof(c->why),
			"no process limit: no pids cgroup, and RLIMIT_NPROC is per user "
			"namespace only since Linux 5.14");
}

void kb__sb_probe_summary(struct kb_sandbox_caps *c,
			  const struct kb__sb_host *h)
{
	const int ns_rc = h->ns_rc, userns_rc = h->userns_rc;
	const unsigned cgf = h->cgf;

	snprintf(
		c->summary, sizeof(c->summary),
		"sandbox: isolate=%s mode=%s ns=%s userns=%s seccomp=%s cgroup=\"%s\" "
		"pids=%s memory=%s cgroup_kill=%s%s%s%s",
		c->isolate_ok ? "available" : "UNAVAILABLE", c->mode,
		ns_rc == 0 || userns_rc == 0 ? "yes" : "no",
		userns_rc == 0 ? "yes" : "no",
		c->features & KB_SANDBOX_SECCOMP ? "yes" : "no", h->cg,
		cgf & KB_SANDBOX_CG_PIDS         ? "cgroup"
		: c->features & KB_SANDBOX_NPROC ? "RLIMIT_NPROC"
						 : "unlimited",
		cgf & KB_SANDBOX_CG_MEMORY ? "cgroup" : "unlimited",
		cgf & KB_SANDBOX_CG_KILL ? "yes" : "no",
		c->why[0] ? " why=\"" : "", c->why, c->why[0] ? "\"" : "");
	if (c->isolate_ok)
		kb_info("%s", c->summary);
	else
		kb_warn("%s", c->summary);
}
