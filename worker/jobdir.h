/* kb_jobdir: the per-job run directory.
 *
 * Each job gets a fresh directory under the worker's KB_WORKDIR holding
 * every task file (the submission under the name its task entry gives),
 * the cases file and the build outputs; it is removed when the job ends.
 * File names come from the task, which the platform wrote, so a bad name
 * is the platform's fault; they are still checked, because a name such as
 * "../x" would write outside the job.
 *
 * Thread-safe (no shared state).
 */
#ifndef KB_JOBDIR_H
#define KB_JOBDIR_H

#include <stddef.h>
#include <stdint.h>

#include "kb.pb-c.h"

/* Names the worker writes itself; a task file may not take them. */
#define KB_JOBDIR_CASES "cases.txt"
#define KB_JOBDIR_BINARY "eval.out"

/* The placeholder task.yml uses for the user's file. */
#define KB_SUBMISSION_MARK "@SUBMISSION@"

/* 1 if name is a plain file name: non-empty, at most 255 bytes, no '/',
 * no "..", no leading '-' or '.', no control characters. */
int kb_jobdir_name_ok(const char *name);

/* Creates root (mode 0700, parents included) if missing, then a fresh
 * directory "<root>/job-<id>-XXXXXX" whose path goes into out. Returns 0
 * or -errno with errstr set. */
int kb_jobdir_create(const char *root, uint64_t id, char *out,
		     size_t out_size, char *errstr, size_t errstr_size);

/* Writes every file of t into dir. A file whose content is exactly
 * KB_SUBMISSION_MARK gets code instead (a gateway may leave the
 * substitution to the worker). Returns 0; -EINVAL for a bad, reserved or
 * duplicate name; -errno when writing fails. errstr says which file. */
int kb_jobdir_materialize(const char *dir, const Kb__Task *t,
			  const ProtobufCBinaryData *code, char *errstr,
			  size_t errstr_size);

/* Removes dir and everything in it, making unreadable subdirectories
 * readable first (a submission may chmod what it creates). Never follows
 * symbolic links. Returns 0 or -errno of the first failure. */
int kb_jobdir_remove(const char *dir);

#endif
