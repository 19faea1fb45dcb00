#include "python.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb_util.h"

extern char **environ;

/* What the interpreter says about itself. sys.executable is the
 * interpreter as it runs (a PATH shim, such as pyenv's, resolves to the
 * real one; a virtual environment's stays its own). torch's version comes
 * from its installed metadata, not an import: importing torch took about
 * 2 s on the H100 host, paid by every `kb-worker eval`; whether it really
 * imports and sees the device is the start-up self-test's question
 * (selftest.h). */
static const char probe[] =
	"import sys, site\n"
	"print('exe=' + sys.executable)\n"
	"print('version=%d.%d.%d' % sys.version_info[:3])\n"
	"d = {sys.prefix, sys.base_prefix, sys.exec_prefix, "
	"sys.base_exec_prefix}\n"
	"try:\n"
	"    d.update(site.getsitepackages())\n"
	"except Exception:\n"
	"    pass\n"
	"for x in sorted(d):\n"
	"    print('dir=' + x)\n"
	"try:\n"
	"    from importlib.metadata import version\n"
	"    print('torch=' + version('torch'))\n"
	"except Exception:\n"
	"    print('torch=')\n";

/* Directories every sandboxed command sees already (kb_sandbox.h). */
static int system_dir(const char *d)
{
	static const char *const sys_dirs[] = {"/usr", "/lib", "/lib64", "/bin",
					       "/sbin"};

	for (size_t i = 0; i < sizeof(sys_dirs) / sizeof(sys_dirs[0]); i++) {
		size_t n = strlen(sys_dirs[i]);

		if (strncmp(d, sys_dirs[i], n) == 0 &&
		    (d[n] == '\0' || d[n] == '/'))
			return 1;
	}
	return 0;
}

static void copy_value(char *dst, size_t size, const char *v, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, v, len);
	dst[len] = '\0';
}

int kb_python_parse(const char *text, struct kb_python *py)
{
	size_t ndirs = 0;

	py->exe[0] = py->version[0] = py->torch[0] = '\0';
	while (text && *text) {
		size_t len = strcspn(text, "\n");
		const char *eq = memchr(text, '=', len);

		if (eq) {
			size_t k = (size_t)(eq - text), vlen = len - k - 1;
			const char *v = eq + 1;

			if (k == 3 && memcmp(text, "exe", 3) == 0) {
				copy_value(py->exe, sizeof(py->exe), v, vlen);
			} else if (k == 7 && memcmp(text, "version", 7) == 0) {
				copy_value(py->version, sizeof(py->version), v,
					   vlen);
			} else if (k == 5 && memcmp(text, "torch", 5) == 0) {
				copy_value(py->torch, sizeof(py->torch), v,
					   vlen);
			} else if (k == 3 && memcmp(text, "dir", 3) == 0 &&
				   vlen > 1 && v[0] == '/' &&
				   ndirs < KB_PYTHON_DIRS) {
				copy_value(py->store[ndirs],
					   sizeof(py->store[ndirs]), v, vlen);
				if (!system_dir(py->store[ndirs])) {
					py->dirs[ndirs] = py->store[ndirs];
					ndirs++;
				}
			}
		}
		text += len + (text[len] == '\n');
	}
	py->dirs[ndirs] = NULL;
	if (py->exe[0] != '/' || !py->version[0])
		return -EINVAL;
	snprintf(py->bindir, sizeof(py->bindir), "%s", py->exe);
	*strrchr(py->bindir, '/') = '\0';
	return 0;
}

/* A bare name looked up in PATH. */
static int find_in_path(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
		return access(out, X_OK) == 0 ? 0 : -errno;
	}
	for (const char *s = path ? path : "/usr/bin:/bin"; *s;) {
		size_t len = strcspn(s, ":");

		snprintf(out, size, "%.*s/%s", (int)len, s, name);
		if (len && access(out, X_OK) == 0)
			return 0;
		s += len + (s[len] == ':');
	}
	return -ENOENT;
}

/* Runs exe -c probe and reads its stdout, for up to timeout_s. */
static int run_probe(const char *exe, double timeout_s, struct kb_buf *out,
		     int *status)
{
	char *const argv[] = {(char *)exe, "-I", "-c", (char *)probe, NULL};
	posix_spawn_file_actions_t fa;
	int fds[2], rc;
	pid_t pid;
	const double until = kb_mono_s() + timeout_s;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		return -rc;
	}
	for (;;) {
		struct pollfd p = {fds[0], POLLIN, 0};
		double left = until - kb_mono_s();
		char buf[4096];
		ssize_t n;

		if (left <= 0) {
			kill(pid, SIGKILL);
			rc = -ETIMEDOUT;
			break;
		}
		if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		n = read(fds[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		kb_buf_append(out, buf, (size_t)n);
	}
	close(fds[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return rc;
}

int kb_python_resolve(const char *name, double timeout_s, struct kb_python *py,
		      char *errstr, size_t errstr_size)
{
	struct kb_buf out = {0};
	char exe[PATH_MAX];
	int rc, st = 0;

	memset(py, 0, sizeof(*py));
	if ((rc = find_in_path(name, exe, sizeof(exe))) < 0) {
		snprintf(errstr, errstr_size, "KB_PYTHON %s: %s", name,
			 rc == -ENOENT ? "not found in PATH" : strerror(-rc));
		return rc;
	}
	rc = run_probe(exe, timeout_s, &out, &st);
	if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		rc = -EIO;
	if (rc == 0 && kb_python_parse(out.data ? out.data : "", py) < 0)
		rc = -EINVAL;
	if (rc < 0)
		snprintf(errstr, errstr_size, "KB_PYTHON %s does not run: %s",
			 exe,
			 rc == -ETIMEDOUT ? "no answer in time"
			 : rc == -EIO     ? "it exited with an error"
			 : rc == -EINVAL  ? "it gave no usable answer"
					  : strerror(-rc));
	kb_buf_free(&out);
	return rc;
}
