#include "jobdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb_log.h"
#include "kb_util.h"

#define JOB_PREFIX "job-"
#define LOCK_NAME ".lock"

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

int kb_jobdir_mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Makes dir/name (mode) and opens it. Returns the descriptor or -errno. */
static int make_subdir(int dirfd, const char *name, mode_t mode)
{
	int fd;

	if (mkdirat(dirfd, name, mode) < 0)
		return -errno;
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* The mode regardless of the umask. */
	if (fchmod(fd, mode) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static void set_paths(struct kb_jobdir *j)
{
	snprintf(j->task, sizeof(j->task), "%s/" KB_JOBDIR_TASK, j->path);
	snprintf(j->harness, sizeof(j->harness), "%s/" KB_JOBDIR_HARNESS,
		 j->path);
	snprintf(j->out, sizeof(j->out), "%s/" KB_JOBDIR_OUT, j->path);
	snprintf(j->home, sizeof(j->home), "%s/" KB_JOBDIR_HOME, j->path);
	snprintf(j->step, sizeof(j->step), "%s/" KB_JOBDIR_STEP, j->path);
}

int kb_jobdir_open(struct kb_jobdir *j, const char *root, uint64_t id,
		   char *errstr, size_t errstr_size)
{
	int rc = kb_jobdir_mkdirs(root, 0700), fd;

	memset(j, 0, sizeof(*j));
	j->fd = j->lock_fd = j->out_fd = j->step_fd = -1;
	if (rc < 0) {
		snprintf(errstr, errstr_size, "cannot create %s: %s", root,
			 strerror(-rc));
		return rc;
	}
	if ((size_t)snprintf(j->path, sizeof(j->path),
			     "%s/" JOB_PREFIX "%" PRIu64 "-XXXXXX", root,
			     id) >= sizeof(j->path) - 32) {
		snprintf(errstr, errstr_size, "work directory path too long");
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(j->path)) {
		rc = -errno;
		snprintf(errstr, errstr_size, "mkdtemp in %s: %s", root,
			 strerror(errno));
		j->path[0] = '\0';
		return rc;
	}
	set_paths(j);
	j->fd = open(j->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (j->fd < 0) {
		rc = -errno;
		goto fail;
	}
	j->lock_fd = openat(j->fd, LOCK_NAME,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
	if (j->lock_fd < 0 || flock(j->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((fd = make_subdir(j->fd, KB_JOBDIR_TASK, 0755)) < 0 ||
	    (close(fd), (fd = make_subdir(j->fd, KB_JOBDIR_HOME, 0700))) < 0 ||
	    (close(fd), (j->out_fd = make_subdir(j->fd, KB_JOBDIR_OUT, 0755))) <
		    0) {
		rc = fd < 0 ? fd : j->out_fd;
		j->out_fd = -1;
		goto fail;
	}
	return 0;
fail:
	snprintf(errstr, errstr_size, "job directory %s: %s", j->path,
		 strerror(-rc));
	kb_jobdir_close(j, 0);
	return rc;
}

int kb_jobdir_write_at(int dirfd, const char *name, const void *buf, size_t len,
		       int mode)
{
	const char *p = buf;
	int fd = openat(dirfd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			mode & 0777);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fchmod(fd, (mode_t)(mode & 0777)) < 0)
		rc = -errno;
	while (rc == 0 && len > 0) {
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

static int reserved(const char *name)
{
	return strcmp(name, KB_JOBDIR_CASES) == 0 ||
	       strcmp(name, KB_JOBDIR_BINARY) == 0;
}

/* Checks every name before anything is written, so a bad task leaves
 * nothing half-written behind. */
static int check_names(const Kb__Task *t, char *errstr, size_t errstr_size)
{
	for (size_t i = 0; i < t->n_files; i++) {
		const char *name = t->files[i]->name;

		if (!kb_jobdir_name_ok(name) || reserved(name)) {
			snprintf(errstr, errstr_size,
				 "task file name \"%s\" is not allowed",
				 name ? name : "");
			return -EINVAL;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(t->files[k]->name, name) == 0) {
				snprintf(errstr, errstr_size,
					 "task file \"%s\" is listed twice",
					 name);
				return -EINVAL;
			}
	}
	return 0;
}

int kb_jobdir_materialize(struct kb_jobdir *j, const Kb__Task *t,
			  const ProtobufCBinaryData *code, long sub_index,
			  int with_submission, char *errstr, size_t errstr_size)
{
	const size_t mark_len = strlen(KB_SUBMISSION_MARK);
	const char *name = with_submission ? KB_JOBDIR_TASK : KB_JOBDIR_HARNESS;
	int dirfd, rc;

	if ((rc = check_names(t, errstr, errstr_size)) < 0)
		return rc;
	if (with_submission) {
		dirfd = openat(j->fd, name,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dirfd < 0)
			dirfd = -errno;
	} else {
		dirfd = make_subdir(j->fd, name, 0755);
		if (dirfd == -EEXIST)
			return 0;
	}
	if (dirfd < 0) {
		snprintf(errstr, errstr_size, "%s/%s: %s", j->path, name,
			 strerror(-dirfd));
		return dirfd;
	}
	for (size_t i = 0; i < t->n_files && rc == 0; i++) {
		const Kb__TaskFile *f = t->files[i];
		const ProtobufCBinaryData *c = &f->content;
		const int is_mark =
			c->len == mark_len &&
			memcmp(c->data, KB_SUBMISSION_MARK, mark_len) == 0;

		if (is_mark || (long)i == sub_index) {
			if (!with_submission)
				continue;
			if (code && is_mark)
				c = code;
		}
		rc = kb_jobdir_write_at(dirfd, f->name, c->data, c->len, 0644);
		if (rc < 0)
			snprintf(errstr, errstr_size, "write %s/%s/%s: %s",
				 j->path, name, f->name, strerror(-rc));
	}
	close(dirfd);
	return rc;
}

int kb_jobdir_step_begin(struct kb_jobdir *j, char *errstr, size_t errstr_size)
{
	int fd;

	if (j->step_fd >= 0) {
		snprintf(errstr, errstr_size, "%s: the last step was not ended",
			 j->step);
		return -EEXIST;
	}
	fd = make_subdir(j->fd, KB_JOBDIR_STEP, 0700);
	if (fd < 0) {
		snprintf(errstr, errstr_size, "mkdir %s: %s", j->step,
			 strerror(-fd));
		return fd;
	}
	j->step_fd = fd;
	return 0;
}

int kb_jobdir_step_put(struct kb_jobdir *j, const char *name, const void *data,
		       size_t len, int mode)
{
	if (j->step_fd < 0 || !kb_jobdir_name_ok(name))
		return -EINVAL;
	return kb_jobdir_write_at(j->step_fd, name, data, len, mode);
}

/* Copies the open regular file in to a new file name of dst_fd. */
static int copy_fd(int in, const struct stat *st, int dst_fd, const char *name,
		   int mode)
{
	char buf[65536];
	int out, rc = 0;
	off_t left = st->st_size;

	out = openat(dst_fd, name,
		     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     mode & 0777);
	if (out < 0)
		return -errno;
	if (fchmod(out, (mode_t)(mode & 0777)) < 0)
		rc = -errno;
	/* At most the size fstat saw: the file cannot grow under us (no
	 * process of the command is left), and a copy is never larger than
	 * the file that was checked. */
	while (rc == 0 && left > 0) {
		ssize_t n = read(in, buf,
				 (size_t)left < sizeof(buf) ? (size_t)left
							    : sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		for (ssize_t w = 0; rc == 0 && w < n;) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));

			if (k < 0 && errno != EINTR)
				rc = -errno;
			else if (k > 0)
				w += k;
		}
		left -= n;
	}
	if (rc == 0) {
		const struct timespec times[2] = {st->st_atim, st->st_mtim};

		if (futimens(out, times) < 0)
			rc = -errno;
	}
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dst_fd, name, 0);
	return rc;
}

/* Opens src_fd/name for reading without following a link and without
 * blocking (a FIFO opens at once), and checks it is a regular file no
 * larger than KB_JOBDIR_TAKE_MAX. Returns the descriptor or -errno. */
static int open_regular(int src_fd, const char *name, struct stat *st)
{
	int fd = openat(src_fd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0)
		rc = -errno;
	else if (!S_ISREG(st->st_mode))
		rc = -EINVAL;
	else if ((uint64_t)st->st_size > KB_JOBDIR_TAKE_MAX)
		rc = -EFBIG;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

static int take(int src_fd, const char *src_name, int dst_fd, int mode,
		char *errstr, size_t errstr_size)
{
	struct stat st;
	int in, rc;

	if (!kb_jobdir_name_ok(src_name)) {
		snprintf(errstr, errstr_size, "\"%s\" is not a plain file name",
			 src_name);
		return -EINVAL;
	}
	in = open_regular(src_fd, src_name, &st);
	if (in < 0) {
		snprintf(errstr, errstr_size, "%s: %s", src_name,
			 in == -EINVAL  ? "not a regular file"
			 : in == -ELOOP ? "a symbolic link"
					: strerror(-in));
		return in;
	}
	rc = copy_fd(in, &st, dst_fd, src_name, mode);
	close(in);
	if (rc < 0)
		snprintf(errstr, errstr_size, "copy of %s: %s", src_name,
			 strerror(-rc));
	return rc;
}

int kb_jobdir_step_take(struct kb_jobdir *j, const char *name, int dst_fd,
			int mode, char *errstr, size_t errstr_size)
{
	if (j->step_fd < 0) {
		snprintf(errstr, errstr_size, "no step to take %s from", name);
		return -EINVAL;
	}
	return take(j->step_fd, name, dst_fd >= 0 ? dst_fd : j->out_fd, mode,
		    errstr, errstr_size);
}

int kb_jobdir_step_read(struct kb_jobdir *j, const char *name, size_t max,
			char **data, size_t *len)
{
	struct stat st;
	char *buf;
	size_t n = 0;
	int in;

	*data = NULL;
	*len = 0;
	if (j->step_fd < 0 || !kb_jobdir_name_ok(name))
		return -EINVAL;
	in = open_regular(j->step_fd, name, &st);
	if (in < 0)
		return in;
	if (st.st_size < 0 || (uint64_t)st.st_size > max) {
		close(in);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(in);
		return -ENOMEM;
	}
	/* At most the size seen: a file still growing is cut there. */
	while (n < (size_t)st.st_size) {
		ssize_t got = read(in, buf + n, (size_t)st.st_size - n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(in);
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

int kb_jobdir_copy_in(int dst_fd, const char *src_dir, const char *name,
		      int mode, char *errstr, size_t errstr_size)
{
	int src =
		open(src_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (src < 0) {
		rc = -errno;
		snprintf(errstr, errstr_size, "%s: %s", src_dir,
			 strerror(errno));
		return rc;
	}
	rc = take(src, name, dst_fd, mode, errstr, errstr_size);
	close(src);
	return rc;
}

int kb_jobdir_step_end(struct kb_jobdir *j)
{
	int rc;

	if (j->step_fd < 0)
		return 0;
	kb_close_fd(&j->step_fd);
	rc = kb_jobdir_remove(j->step);
	if (rc < 0)
		kb_warn("cannot remove %s: %s", j->step, strerror(-rc));
	return rc;
}

int kb_jobdir_close(struct kb_jobdir *j, int keep)
{
	int rc = 0;

	if (!j || !j->path[0])
		return 0;
	kb_close_fd(&j->step_fd);
	kb_close_fd(&j->out_fd);
	if (keep)
		kb_info("kept job directory %s", j->path);
	else
		rc = kb_jobdir_remove(j->path);
	kb_close_fd(&j->fd);
	kb_close_fd(&j->lock_fd); /* last: the directory is gone or kept */
	j->path[0] = '\0';
	return rc;
}

/* Whether root/name is a job directory that no worker holds. */
static int stale(int root_fd, const char *name)
{
	int dfd, lfd, free_;

	if (strncmp(name, JOB_PREFIX, strlen(JOB_PREFIX)) != 0)
		return 0;
	dfd = openat(root_fd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	lfd = openat(dfd, LOCK_NAME,
		     O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	/* No lock file: a directory from before locks, or one whose creation
	 * was cut short; either way nobody uses it. */
	free_ = lfd < 0 ? errno == ENOENT : flock(lfd, LOCK_EX | LOCK_NB) == 0;
	if (lfd >= 0)
		close(lfd);
	close(dfd);
	return free_;
}

int kb_jobdir_sweep(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *e;
	int n = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		int rc;

		if (!stale(dirfd(d), e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
		rc = kb_jobdir_remove(path);
		if (rc < 0)
			kb_warn("stale job directory %s: %s", path,
				strerror(-rc));
		else
			n++;
	}
	closedir(d);
	return n;
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
		sub = openat(fd, e->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* A directory the submission made unreadable: make it ours
		 * again through the descriptor (not the name). */
		if (sub < 0 && errno == EACCES &&
		    fchmodat(fd, e->d_name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
			sub = openat(fd, e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
		if (sub >= 0 && (st.st_mode & 0700) != 0700)
			fchmod(sub, 0700);
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

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* Not a link (that would be ELOOP): a directory made unreadable. */
	if (fd < 0 && errno == EACCES && chmod(dir, 0700) == 0)
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = remove_contents(fd);
	if (rc == 0 && rmdir(dir) < 0)
		rc = -errno;
	return rc;
}
