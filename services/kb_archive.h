/* kb_archive: a problem archive (a gzip'd tar, upstream's GitHub tarball)
 * extracted as the untrusted input it is.
 *
 * Only regular files and directories come out; a symbolic link, a hard
 * link, a device, a FIFO or anything else refuses the whole archive, and
 * so does a member whose name is absolute or climbs out with "..". The
 * extraction runs under a budget of bytes written, members and depth, so
 * that a small archive cannot fill the disk. Nothing in the archive
 * decides a file's mode or owner: files are 0644, directories 0755, owned
 * by the caller.
 *
 * Thread-safety: the functions are re-entrant.
 */
#ifndef KB_ARCHIVE_H
#define KB_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

struct kb_archive_limits {
	uint64_t max_bytes; /* file bytes written in all */
	size_t max_entries; /* members of any kind */
	unsigned max_depth; /* path components of a member's name */
};

/* A member's name as it will be extracted: kb_path_beneath("", name)
 * folded into norm ("" for the top directory itself). Returns 0, or
 * -EINVAL with errstr saying why (absolute, climbing out with "..",
 * deeper than max_depth, too long). Pure. */
int kb_archive_member_name(const char *name, unsigned max_depth, char *norm,
			   size_t norm_size, char *errstr, size_t errstr_size);

/* Extracts the archive file at path into the directory dest, which must
 * exist (and should be empty and private to the caller). Returns 0, or
 * negative with errstr naming the member and the reason ("archive member
 * 'x/y' is a symbolic link", "the archive holds more than N bytes", ...);
 * on error dest may hold part of the archive, which the caller removes. */
int kb_archive_extract(const char *path, const char *dest,
		       const struct kb_archive_limits *lim, char *errstr,
		       size_t errstr_size);

/* Writes data[0..len) as the new file rel (as kb_path_beneath folds
 * it) beneath the directory root, making the directories on the way;
 * no link is followed and no file replaced. Returns 0, -EEXIST when the
 * file is there already, or another -errno. */
int kb_tree_write(const char *root, const char *rel, const void *data,
		  size_t len);

/* Removes the tree at path (not following links; a missing path is
 * fine). Returns 0 or -errno of the first failure. */
int kb_tree_remove(const char *path);

#endif
