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
 * After picking a mode the probe runs /bin/true through the whole isolated
 * path (mounts, pivot_root, proc, identity, seccomp, cgroup); only if that
 * works is isolation declared available.
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

int sb__probe_cached(struct kb_sandbox_caps *caps);
int sb__probe_mode_userns(void);
int sb__probe_nproc_ok(void);

static struct {
	int state; /* 0 not probed, 1 probing (trial run), 2 done */
	int userns;
	int nproc_ok; /* RLIMIT_NPROC counts only the run's processes */
	struct kb_sandbox_caps caps;
} P;

/* Can a child be created with these namespace flags? */
static int try_clone(unsigned long flags)
{
	pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
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

int sb__probe_mode_userns(void)
{
	return P.userns;
}

int sb__probe_nproc_ok(void)
{
	return P.nproc_ok;
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

static void trial_run(struct kb_sandbox_caps *c)
{
	char dir[] = "/tmp/kb-sandbox-probe-XXXXXX";
	char *argv[] = { "true", NULL };
	char *env[] = { "PATH=/usr/bin:/bin", NULL };
	struct kb_sandbox_result r;
	char err[200] = "";

	if (!mkdtemp(dir)) {
		snprintf(c->why, sizeof(c->why), "trial run: mkdtemp: %s", strerror(errno));
		return;
	}
	struct kb_sandbox_opts o;
	memset(&o, 0, sizeof(o));
	o.workdir = dir;
	o.argv = argv;
	o.env = env;
	o.wall_timeout_s = 10;
	o.isolate = 1;
	/* Exercise the memory limit only where it exists (else the "not
	 * limited" warning would fire here instead of on a real run). */
	o.memory_limit_mb = (c->features & KB_SANDBOX_CG_MEMORY) ? 64 : 0;
	P.state = 1;
	int rc = kb_sandbox_run(&o, &r, err, sizeof(err));
	P.state = 0;
	if (rc < 0)
		snprintf(c->why, sizeof(c->why), "trial run failed: %s", err);
	else if (!r.exited || r.exit_code != 0)
		snprintf(c->why, sizeof(c->why), "trial run of true: exit %d signal %d%s",
			 r.exit_code, r.signal, r.timed_out ? " (timeout)" : "");
	else
		c->isolate_ok = 1;
	kb_sandbox_result_clear(&r);
	rmdir(dir);
}

int kb_sandbox_probe(struct kb_sandbox_caps *caps, char *errstr, size_t errstr_size)
{
	const unsigned long ns = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
				 CLONE_NEWUTS;
	struct kb_sandbox_caps *c = &P.caps;
	char cg[300], sc[160] = "ok";
	unsigned cgf = 0;

	if (!caps) {
		if (errstr && errstr_size)
			snprintf(errstr, errstr_size, "kb_sandbox_probe: caps is NULL");
		return -EINVAL;
	}
	if (P.state == 2) {
		*caps = *c;
		return 0;
	}
	memset(c, 0, sizeof(*c));

	int admin = have_cap_sys_admin();
	int ns_rc = admin ? try_clone(ns) : -EPERM;
	int userns_rc = try_clone(ns | CLONE_NEWUSER);
	if (admin && ns_rc == 0) {
		snprintf(c->mode, sizeof(c->mode), "root");
		c->features |= KB_SANDBOX_NS | KB_SANDBOX_UID | KB_SANDBOX_NPROC;
		P.nproc_ok = 1; /* each run has a uid of its own */
	} else if (userns_rc == 0) {
		snprintf(c->mode, sizeof(c->mode), "userns");
		P.userns = 1;
		P.nproc_ok = kernel_at_least(5, 14);
		c->features |= KB_SANDBOX_NS | KB_SANDBOX_USERNS | (P.nproc_ok ? KB_SANDBOX_NPROC : 0);
	} else {
		snprintf(c->mode, sizeof(c->mode), "none");
		snprintf(c->why, sizeof(c->why),
			 "cannot create namespaces (as %s: %s; user namespace: %s)",
			 admin ? "CAP_SYS_ADMIN" : "unprivileged",
			 strerror(-(admin ? ns_rc : -EPERM)), strerror(-userns_rc));
	}

	const struct sock_filter *prog;
	unsigned short len;
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
		snprintf(sc, sizeof(sc), "kernel lacks seccomp");
	else if (sb_seccomp_program(&prog, &len, sc, sizeof(sc)) == 0)
		c->features |= KB_SANDBOX_SECCOMP;
	if (!(c->features & KB_SANDBOX_SECCOMP) && !c->why[0])
		snprintf(c->why, sizeof(c->why), "seccomp unavailable: %s", sc);

	sb_cgroup_init(cg, sizeof(cg), &cgf);
	c->features |= cgf;
	snprintf(c->cgroup, sizeof(c->cgroup), "%s",
		 strncmp(cg, "v2", 2) == 0 ? "v2" : strncmp(cg, "v1", 2) == 0 ? "v1" : "none");
	if (!strcmp(c->mode, "userns") && !(cgf & KB_SANDBOX_CG_PIDS) && !P.nproc_ok && !c->why[0])
		snprintf(c->why, sizeof(c->why),
			 "no process limit: no pids cgroup, and RLIMIT_NPROC is per user "
			 "namespace only since Linux 5.14");

	if (!c->why[0])
		trial_run(c);

	snprintf(c->summary, sizeof(c->summary),
		 "sandbox: isolate=%s mode=%s ns=%s userns=%s seccomp=%s cgroup=\"%s\" "
		 "pids=%s memory=%s cgroup_kill=%s%s%s%s",
		 c->isolate_ok ? "available" : "UNAVAILABLE", c->mode,
		 ns_rc == 0 || userns_rc == 0 ? "yes" : "no", userns_rc == 0 ? "yes" : "no",
		 c->features & KB_SANDBOX_SECCOMP ? "yes" : "no", cg,
		 cgf & KB_SANDBOX_CG_PIDS ? "cgroup" :
		 c->features & KB_SANDBOX_NPROC ? "RLIMIT_NPROC" : "unlimited",
		 cgf & KB_SANDBOX_CG_MEMORY ? "cgroup" : "unlimited",
		 cgf & KB_SANDBOX_CG_KILL ? "yes" : "no",
		 c->why[0] ? " why=\"" : "", c->why, c->why[0] ? "\"" : "");
	if (c->isolate_ok)
		kb_info("%s", c->summary);
	else
		kb_warn("%s", c->summary);
	P.state = 2;
	*caps = *c;
	return 0;
}

/* For kb_sandbox_run(): the probe's answer, probing first if needed. During
 * the probe's own trial run isolation counts as available. */
int sb__probe_cached(struct kb_sandbox_caps *caps)
{
	if (P.state == 1) {
		*caps = P.caps;
		caps->isolate_ok = 1;
		return 0;
	}
	return kb_sandbox_probe(caps, NULL, 0);
}
