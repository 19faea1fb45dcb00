/* Looks for things outside its workdir: a secret file the test made (path
 * and content in argv), the worker's environment and command line (argv[3],
 * optional) through /proc, host files that must not be there. */
#include "hostile.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>

static char secret[256];

static int file_has_text(const char *path, const char *text)
{
	char buf[65536];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -1;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = '\n';
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

static int file_has_secret(const char *path)
{
	return file_has_text(path, secret);
}

int main(int argc, char **argv)
{
	hostile_start();
	if (argc < 3)
		return 2;
	snprintf(secret, sizeof(secret), "%s", argv[2]);
	const char *path = argv[1];

	int r = file_has_secret(path);
	if (r > 0)
		ACHIEVED("read the secret file %s", path);
	else
		BLOCKED("open %s (%s)", path,
			r < 0 ? strerror(errno) : "no secret in it");

	/* Every process we can see: their environment and command line. */
	DIR *d = opendir("/proc");
	struct dirent *e;
	int seen = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		seen++;
		if (atoi(e->d_name) == getpid())
			continue; /* our own argv holds the secret */
		char p[300];
		snprintf(p, sizeof(p), "/proc/%s/environ", e->d_name);
		if (file_has_secret(p) > 0)
			ACHIEVED("found the secret in %s", p);
		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		if (file_has_secret(p) > 0)
			ACHIEVED("found the secret in %s", p);
		if (argc > 3 && file_has_text(p, argv[3]) > 0)
			ACHIEVED("sees the worker's command line in %s", p);
	}
	if (d)
		closedir(d);
	printf("visible processes: %d\n", seen);
	if (seen > 3)
		ACHIEVED("sees %d processes (expected only the run's)", seen);
	if (file_has_secret("/proc/1/environ") < 0)
		BLOCKED("/proc/1/environ (%s)", strerror(errno));
	char pp[64];
	snprintf(pp, sizeof(pp), "/proc/%d/environ", (int)getppid());
	if (file_has_secret(pp) > 0)
		ACHIEVED("found the secret in the parent's environment");

	static const char *const host_files[] = {
		"/etc/shadow",    "/etc/gshadow",
		"/root",          "/home",
		"/var",           "/work",
		"/opt",           "/etc/machine-id",
		"/etc/ssh",       "/run",
		"/sys/fs/cgroup", "/boot",
	};
	for (size_t i = 0; i < sizeof(host_files) / sizeof(host_files[0]); i++)
		EXPECT_FAIL(access(host_files[i], F_OK) == 0, host_files[i]);
	/* The secret's directory (the host's /tmp) must not be ours. */
	char dir[256];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	d = opendir(dir[0] ? dir : "/");
	int n = 0;
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, "kb-secret"))
			n++;
	if (d)
		closedir(d);
	if (n)
		ACHIEVED("lists %d kb-secret files in %s", n, dir);
	else
		BLOCKED("no kb-secret files visible in %s", dir);
	return hostile_achieved;
}
