/* kb_archive: see kb_archive.h. libarchive reads the archive; the writing
 * is ours, so that every file is created by name beneath the destination
 * with O_EXCL and O_NOFOLLOW, and nothing of the archive's metadata
 * (links, modes, owners, times) reaches the disk. */
#include "kb_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "kb_util.h"

int kb_archive_member_name(const char *name, unsigned max_depth, char *norm,
			   size_t norm_size, char *errstr, size_t errstr_size)
{
	unsigned depth = 0;
	int rc;

	if (!name || !*name) {
		kb_seterr(errstr, errstr_size, "an archive member has no name");
		return -EINVAL;
	}
	if (name[0] == '/') {
		kb_seterr(errstr, errstr_size,
			  "archive member '%s' has an absolute name", name);
		return -EINVAL;
	}
	rc = kb_path_beneath("", name, norm, norm_size);
	if (rc == -EXDEV) {
		kb_seterr(errstr, errstr_size,
			  "archive member '%s' climbs out of the archive "
			  "with '..'",
			  name);
		return -EINVAL;
	}
	if (rc < 0) {
		kb_seterr(errstr, errstr_size,
			  "archive member '%.200s...' has too long a name",
			  name);
		return -EINVAL;
	}
	for (const char *p = norm; *p; p++)
		depth += *p == '/';
	depth += *norm != '\0';
	if (depth > max_depth) {
		kb_seterr(errstr, errstr_size,
			  "archive member '%s' is nested deeper than %u "
			  "directories",
			  name, max_depth);
		return -EINVAL;
	}
	return 0;
}

/* Opens (making it when missing) the directory rel beneath dfd, one
 * component at a time, following no link. Returns a descriptor or
 * -errno. */
static int open_dirs(int dfd, const char *rel)
{
	char buf[4096];
	int fd = dup(dfd);

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%s", rel);
	for (char *p = buf; *p;) {
		size_t len = strcspn(p, "/");
		int more = p[len] != '\0', next;
		p[len] = '\0';
		if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
			int e = -errno;
			close(fd);
			return e;
		}
		next = openat(fd, p,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -errno;
		fd = next;
		p += len + more;
	}
	return fd;
}

/* Writes the current member's data into a new file rel beneath dfd,
 * counting it against *left. */
static int write_member(struct archive *a, int dfd, const char *rel,
			uint64_t *left, uint64_t max, char *errstr,
			size_t errstr_size)
{
	const char *slash = strrchr(rel, '/');
	char dir[4096];
	int pfd, fd, rc = 0;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - rel) : 0, rel);
	pfd = open_dirs(dfd, dir);
	if (pfd < 0) {
		kb_seterr(errstr, errstr_size,
			  "archive member '%s': cannot make its directory: %s",
			  rel, strerror(-pfd));
		return pfd;
	}
	fd = openat(pfd, slash ? slash + 1 : rel,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	close(pfd);
	if (fd < 0) {
		rc = -errno;
		kb_seterr(errstr, errstr_size, "archive member '%s': %s", rel,
			  rc == -EEXIST ? "given twice" : strerror(-rc));
		return rc;
	}
	for (;;) {
		char buf[65536];
		la_ssize_t n = archive_read_data(a, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0) {
			kb_seterr(errstr, errstr_size,
				  "archive member '%s': %s", rel,
				  archive_error_string(a));
			rc = -EIO;
			break;
		}
		if ((uint64_t)n > *left) {
			kb_seterr(errstr, errstr_size,
				  "the archive holds more than %llu bytes "
				  "(at '%s')",
				  (unsigned long long)max, rel);
			rc = -EFBIG;
			break;
		}
		*left -= (uint64_t)n;
		for (la_ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				rc = -errno;
				kb_seterr(errstr, errstr_size,
					  "archive member '%s': %s", rel,
					  strerror(errno));
				break;
			}
			off += w;
		}
		if (rc < 0)
			break;
	}
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
		kb_seterr(errstr, errstr_size, "archive member '%s': %s", rel,
			  strerror(-rc));
	}
	return rc;
}

/* What kind of member e is, for a refusal; NULL for a file or directory. */
static const char *refused_kind(struct archive_entry *e)
{
	if (archive_entry_hardlink(e))
		return "a hard link";
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
	case AE_IFDIR:
		return NULL;
	case AE_IFLNK:
		return "a symbolic link";
	case AE_IFCHR:
	case AE_IFBLK:
		return "a device";
	case AE_IFIFO:
		return "a FIFO";
	case AE_IFSOCK:
		return "a socket";
	default:
		return "not a regular file or directory";
	}
}

int kb_archive_extract(const char *path, const char *dest,
		       const struct kb_archive_limits *lim, char *errstr,
		       size_t errstr_size)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	uint64_t left = lim->max_bytes;
	size_t entries = 0;
	int dfd = -1, rc = 0, r;

	if (!a) {
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_none(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, path, 65536) != ARCHIVE_OK) {
		kb_seterr(errstr, errstr_size, "not a .tar.gz archive: %s",
			  archive_error_string(a));
		archive_read_free(a);
		return -EINVAL;
	}
	dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		kb_seterr(errstr, errstr_size, "%s: %s", dest, strerror(-rc));
	}
	while (rc == 0 &&
	       (r = archive_read_next_header(a, &e)) != ARCHIVE_EOF) {
		char norm[4096];
		const char *why;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			kb_seterr(errstr, errstr_size, "a broken archive: %s",
				  archive_error_string(a));
			rc = -EINVAL;
			break;
		}
		if (++entries > lim->max_entries) {
			kb_seterr(errstr, errstr_size,
				  "the archive holds more than %zu members",
				  lim->max_entries);
			rc = -EFBIG;
			break;
		}
		rc = kb_archive_member_name(archive_entry_pathname(e),
					    lim->max_depth, norm, sizeof(norm),
					    errstr, errstr_size);
		if (rc < 0)
			break;
		if ((why = refused_kind(e)) != NULL) {
			kb_seterr(errstr, errstr_size,
				  "archive member '%s' is %s: a problem "
				  "source may hold only regular files and "
				  "directories",
				  norm, why);
			rc = -EINVAL;
			break;
		}
		if (archive_entry_filetype(e) == AE_IFDIR) {
			int fd = *norm ? open_dirs(dfd, norm) : 0;
			if (fd < 0) {
				rc = fd;
				kb_seterr(errstr, errstr_size,
					  "archive member '%s': %s", norm,
					  strerror(-rc));
			} else if (*norm) {
				close(fd);
			}
			continue;
		}
		if (!*norm) {
			kb_seterr(errstr, errstr_size,
				  "an archive member names the top directory "
				  "as a file");
			rc = -EINVAL;
			break;
		}
		rc = write_member(a, dfd, norm, &left, lim->max_bytes, errstr,
				  errstr_size);
	}
	if (dfd >= 0)
		close(dfd);
	archive_read_free(a);
	return rc;
}

int kb_tree_write(const char *root, const char *rel, const void *data,
		  size_t len)
{
	char norm[4096], dir[4096];
	const char *slash;
	int dfd, pfd, fd, rc = kb_path_beneath("", rel, norm, sizeof(norm));

	if (rc < 0)
		return rc;
	if (!*norm)
		return -EINVAL;
	slash = strrchr(norm, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - norm) : 0,
		 norm);
	dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	pfd = open_dirs(dfd, dir);
	close(dfd);
	if (pfd < 0)
		return pfd;
	fd = openat(pfd, slash ? slash + 1 : norm,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	rc = fd < 0 ? -errno : 0;
	close(pfd);
	for (size_t off = 0; rc == 0 && off < len;) {
		ssize_t w = write(fd, (const char *)data + off, len - off);
		if (w < 0 && errno != EINTR)
			rc = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (fd >= 0 && close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

int kb_tree_remove(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	/* FTW_PHYS: a link is removed, never followed; FTW_DEPTH: a
	 * directory after what it holds. */
	if (nftw(path, rm_one, 16, FTW_PHYS | FTW_DEPTH) != 0)
		return errno ? -errno : -EIO;
	return 0;
}
