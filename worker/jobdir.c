#include "jobdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb_log.h"

int kb_jobdir_name_ok(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (len == 0 || len > 255 || name[0] == '-' || name[0] == '.' ||
	    strchr(name, '/') || strstr(name, ".."))
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return 0;
	return 1;
}

static int mkdir_p(const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int kb_jobdir_create(const char *root, uint64_t id, char *out,
		     size_t out_size, char *errstr, size_t errstr_size)
{
	int rc = mkdir_p(root);

	if (rc < 0) {
		snprintf(errstr, errstr_size, "cannot create %s: %s", root,
			 strerror(-rc));
		return rc;
	}
	if (snprintf(out, out_size, "%s/job-%" PRIu64 "-XXXXXX", root, id) >=
	    (int)out_size) {
		snprintf(errstr, errstr_size, "work directory path too long");
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(out)) {
		rc = -errno;
		snprintf(errstr, errstr_size, "mkdtemp in %s: %s", root,
			 strerror(errno));
		return rc;
	}
	return 0;
}

static int reserved(const char *name)
{
	return strcmp(name, KB_JOBDIR_CASES) == 0 ||
	       strcmp(name, KB_JOBDIR_BINARY) == 0;
}

static int write_at(int dirfd, const char *name, const void *buf, size_t len)
{
	const char *p = buf;
	int fd = openat(dirfd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0644);
	int rc = 0;

	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int kb_jobdir_materialize(const char *dir, const Kb__Task *t,
			  const ProtobufCBinaryData *code, char *errstr,
			  size_t errstr_size)
{
	const size_t mark_len = strlen(KB_SUBMISSION_MARK);
	int dirfd, rc = 0;

	/* Check every name before writing anything, so a bad task leaves
	 * nothing half-written behind. */
	for (size_t i = 0; i < t->n_files; i++) {
		const char *name = t->files[i]->name;

		if (!kb_jobdir_name_ok(name) || reserved(name)) {
			snprintf(errstr, errstr_size,
				 "task file name \"%s\" is not allowed",
				 name ? name : "");
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(t->files[j]->name, name) == 0) {
				snprintf(errstr, errstr_size,
					 "task file \"%s\" is listed twice",
					 name);
				return -EINVAL;
			}
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		rc = -errno;
		snprintf(errstr, errstr_size, "open %s: %s", dir,
			 strerror(errno));
		return rc;
	}
	for (size_t i = 0; i < t->n_files && rc == 0; i++) {
		const Kb__TaskFile *f = t->files[i];
		const ProtobufCBinaryData *c = &f->content;

		if (code && c->len == mark_len &&
		    memcmp(c->data, KB_SUBMISSION_MARK, mark_len) == 0)
			c = code;
		rc = write_at(dirfd, f->name, c->data, c->len);
		if (rc < 0)
			snprintf(errstr, errstr_size, "write %s/%s: %s", dir,
				 f->name, strerror(-rc));
	}
	close(dirfd);
	return rc;
}

/* Empties the directory open as fd (which this call closes). */
static int remove_contents(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((e = readdir(d))) {
		struct stat st;
		int sub, r;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (rc == 0)
				rc = -errno;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(fd, e->d_name, 0) < 0 && rc == 0)
				rc = -errno;
			continue;
		}
		/* If this fails, openat() below reports why. */
		if ((st.st_mode & 0700) != 0700 &&
		    fchmodat(fd, e->d_name, 0700, 0) < 0)
			kb_debug("chmod %s: %s", e->d_name, strerror(errno));
		sub = openat(fd, e->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = sub < 0 ? -errno : remove_contents(sub);
		if (r == 0 && unlinkat(fd, e->d_name, AT_REMOVEDIR) < 0)
			r = -errno;
		if (r < 0 && rc == 0)
			rc = r;
	}
	closedir(d);
	return rc;
}

int kb_jobdir_remove(const char *dir)
{
	int fd, rc;

	chmod(dir, 0700);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = remove_contents(fd);
	if (rc == 0 && rmdir(dir) < 0)
		rc = -errno;
	return rc;
}
