/* Tries to write outside its workdir, and to plant links that would make a
 * root process (the worker, chowning the workdir back) touch host files. */
#include "hostile.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

static void try_create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		ACHIEVED("created %s", path);
		close(fd);
		unlink(path);
	} else {
		BLOCKED("create %s (%s)", path, strerror(errno));
	}
}

int main(int argc, char **argv)
{
	hostile_start();
	const char *token = argc > 1 ? argv[1] : "x";
	char path[512];
	static const char *const dirs[] = {"/",    "/usr", "/usr/bin",
					   "/etc", "/dev", "/proc",
					   "/sys", "/bin", "/lib"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/kb-escape-%s", dirs[i], token);
		try_create(path);
	}
	/* The workdir's parent is the run's private /tmp: creating there is
	 * allowed; the test checks that nothing appeared on the host. */
	snprintf(path, sizeof(path), "../kb-escape-%s", token);
	int pfd = open(path, O_WRONLY | O_CREAT, 0644);
	printf("workdir parent file: %s\n",
	       pfd >= 0 ? "created" : strerror(errno));
	EXPECT_FAIL(chmod("/etc/passwd", 0666) == 0, "chmod /etc/passwd");
	/* The workdir's parent is in the run's private /tmp (in user-namespace
	 * mode even owned by the run's uid): informational only. */
	printf("chmod of the workdir's parent: %s\n",
	       chmod("..", 0777) == 0 ? "done" : strerror(errno));
	EXPECT_FAIL(link("/etc/passwd", "hardlink") == 0,
		    "hard link to /etc/passwd");
	EXPECT_FAIL(setuid(0) == 0, "setuid(0)");
	/* /tmp is writable but private: the test checks the host's /tmp. */
	snprintf(path, sizeof(path), "/tmp/kb-escape-%s", token);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	printf("private /tmp file: %s\n",
	       fd >= 0 ? "created" : strerror(errno));
	/* Symlinks in the workdir pointing at host files: the worker's chown
	 * back must not follow them (the test checks the targets' owners). */
	if (symlink("/etc/hostname", "link-file") < 0 ||
	    symlink("/etc", "link-dir") < 0 || symlink("/", "link-root") < 0)
		printf("symlink: %s\n", strerror(errno));
	mkdir("sub", 0700);
	chmod("sub", 04777 | 02000); /* set-id bits on a directory */
	fd = open("setuid-file", O_WRONLY | O_CREAT, 04755);
	if (fd >= 0) {
		fchmod(fd, 06755);
		close(fd);
	}
	/* A big file: RLIMIT_FSIZE (256 MiB) stops it (EFBIG once SIGXFSZ is
	 * ignored). */
	signal(SIGXFSZ, SIG_IGN);
	fd = open("big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		static char buf[1 << 20];
		long mib = 0;
		while (mib < 400 &&
		       write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
			mib++;
		if (mib >= 400)
			ACHIEVED("wrote a %ld MiB file", mib);
		else
			BLOCKED("file size stopped at %ld MiB (%s)", mib,
				strerror(errno));
		close(fd);
		unlink("big");
	}
	return hostile_achieved;
}
