/* kb_jobdir: the per-job directory, and the only file operations the
 * worker (root) makes where a submission's commands could have written.
 *
 * Layout of a job directory J = <root>/job-<id>-XXXXXX, owned by the
 * worker, mode 0700, never bound into a command as a whole:
 *
 *   J/.lock    held (flock) while a worker uses J; kb_jobdir_sweep()
 *              removes directories whose lock nobody holds
 *   J/task/    the task's files with the submission, written once before
 *              the first command; read-only to every command
 *   J/harness/ the task's files without the submission, for builds of
 *              trusted objects (made on demand); read-only
 *   J/out/     build outputs, copied out of a build's scratch by the
 *              worker; read-only to every command, so no command can
 *              change what a later one runs
 *   J/home/    HOME and the caches of the job's commands (torch
 *              extensions, Triton): the user's own files, kept across the
 *              job's commands and given to each command's uid
 *   J/step/    the scratch of one command, made fresh before it (the
 *              worker may put files there first, such as the cases) and
 *              removed after it
 *
 * Every operation here works relative to a directory descriptor the
 * worker opened itself (never a path a command could have swapped), opens
 * with O_NOFOLLOW and, where it creates, O_EXCL; what it reads out of a
 * scratch must be a regular file, opened without blocking. Nothing here
 * waits on anything a command made.
 *
 * Names come from the task, which the platform wrote, so a bad name is
 * the platform's fault; they are still checked, because a name such as
 * "../x" would write outside the directory.
 *
 * Thread-safe (no shared state); one struct kb_jobdir per job.
 */
#ifndef KB_JOBDIR_H
#define KB_JOBDIR_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kb.pb-c.h"

#define KB_JOBDIR_TASK "task"
#define KB_JOBDIR_HARNESS "harness"
#define KB_JOBDIR_OUT "out"
#define KB_JOBDIR_HOME "home"
#define KB_JOBDIR_STEP "step"

/* Names the worker writes itself. */
#define KB_JOBDIR_CASES "cases.txt"
#define KB_JOBDIR_BINARY "eval.out"

/* The placeholder task.yml uses for the user's file. */
#define KB_SUBMISSION_MARK "@SUBMISSION@"

/* The largest file the worker copies out of a build's scratch. */
#define KB_JOBDIR_TAKE_MAX ((size_t)1 << 30)

struct kb_jobdir {
	int fd;      /* J, or -1 */
	int lock_fd; /* J/.lock, held while the job runs */
	int out_fd;  /* J/out */
	int step_fd; /* J/step while a command's scratch exists, else -1 */
	char path[PATH_MAX];
	char task[PATH_MAX], harness[PATH_MAX], out[PATH_MAX];
	char home[PATH_MAX], step[PATH_MAX];
};

/* 1 if name is a plain file name: non-empty, at most 255 bytes, no '/',
 * no "..", no leading '-' or '.', no control characters. */
int kb_jobdir_name_ok(const char *name);

/* mkdir -p: creates path and its missing parents with mode. Returns 0
 * (also when it exists) or -errno. */
int kb_jobdir_mkdirs(const char *path, mode_t mode);

/* Creates root (mode 0700, parents included) if missing, then a fresh
 * job directory with its lock held and task/, out/ and home/ made.
 * Returns 0 or -errno with errstr set; on failure nothing is left. */
int kb_jobdir_open(struct kb_jobdir *j, const char *root, uint64_t id,
		   char *errstr, size_t errstr_size);

/* Writes every file of t into J/task (with_submission) or J/harness
 * (without the submission's file). A file whose content is exactly
 * KB_SUBMISSION_MARK is the submission: it gets code. sub_index names the
 * submission's file when its content is the code itself (-1: none).
 * Returns 0; -EINVAL for a bad or duplicate name; -errno when writing
 * fails. errstr says which file. J/harness is made once; a second call
 * for it does nothing. */
int kb_jobdir_materialize(struct kb_jobdir *j, const Kb__Task *t,
			  const ProtobufCBinaryData *code, long sub_index,
			  int with_submission, char *errstr,
			  size_t errstr_size);

/* Makes a fresh, empty J/step for the next command. Returns 0, or -errno
 * (-EEXIST when the last step was not ended). */
int kb_jobdir_step_begin(struct kb_jobdir *j, char *errstr, size_t errstr_size);

/* Writes a new file into the fresh J/step before its command runs. */
int kb_jobdir_step_put(struct kb_jobdir *j, const char *name, const void *data,
		       size_t len, int mode);

/* Copies the regular file name of J/step into the directory dst_fd
 * (J/out when dst_fd < 0) as a new file of the given mode, keeping its
 * modification time. Refuses (-ELOOP, -EINVAL) anything that is not a
 * regular file, -EFBIG beyond KB_JOBDIR_TAKE_MAX, -EEXIST when the
 * destination exists. Returns 0 or -errno with errstr set. */
int kb_jobdir_step_take(struct kb_jobdir *j, const char *name, int dst_fd,
			int mode, char *errstr, size_t errstr_size);

/* Reads the regular file name of J/step (never through a link, at most
 * max bytes) into *data (malloc'd, NUL-terminated; *len without the NUL).
 * A command may have written it: it is data, nothing more. Returns 0,
 * -ENOENT, -ELOOP (a link), -EINVAL (not a regular file), -EFBIG (over
 * max), or another -errno. */
int kb_jobdir_step_read(struct kb_jobdir *j, const char *name, size_t max,
			char **data, size_t *len);

/* Removes J/step and everything in it. Returns 0 or -errno. */
int kb_jobdir_step_end(struct kb_jobdir *j);

/* Writes a new file name (O_EXCL, never through a link) into dirfd. */
int kb_jobdir_write_at(int dirfd, const char *name, const void *data,
		       size_t len, int mode);

/* Copies the regular file src_dir/name into dst_fd (a directory the
 * worker owns) as a new file of the given mode. For files of trusted
 * places (the harness cache), with the same checks as step_take. */
int kb_jobdir_copy_in(int dst_fd, const char *src_dir, const char *name,
		      int mode, char *errstr, size_t errstr_size);

/* Releases the job: removes J unless keep, closes every descriptor.
 * Returns 0 or -errno of the removal. A NULL or never-opened j is a no-op. */
int kb_jobdir_close(struct kb_jobdir *j, int keep);

/* Removes every job directory under root that no worker holds (left by a
 * worker that was killed). Returns the number removed, or -errno when
 * root cannot be read (a missing root is 0). */
int kb_jobdir_sweep(const char *root);

/* Removes dir and everything in it, making unreadable subdirectories
 * readable first (a submission may chmod what it creates). Never follows
 * symbolic links. Returns 0 or -errno of the first failure. */
int kb_jobdir_remove(const char *dir);

#endif
