/* kb_taskstore: a task's files by content hash, so that a Submission event
 * carries its code and a reference to its task instead of the task itself.
 *
 * A stored task is a packed kb.Task whose submission_file entry has empty
 * content; its reference is the SHA-256 (hex) of those bytes, and it lives
 * in Redis under KB_KEY_TASK (kb_keys.h), written once by the gateway
 * (SET NX, no expiry: the bytes under a reference never change). A worker
 * reads it through a cache: a small one in memory, then files named by
 * reference in a directory of its own, then Redis; every copy is checked
 * against its reference before it is used.
 *
 * kb_taskstore_ref() and kb_taskstore_attach() are pure (no I/O). The
 * handle is for one thread at a time.
 */
#ifndef KB_TASKSTORE_H
#define KB_TASKSTORE_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "kb.pb-c.h"

#define KB_TASKREF_LEN 64

/* ref (65 bytes) = SHA-256 hex of packed. */
void kb_taskstore_ref(const uint8_t *packed, size_t len, char ref[65]);

/* 1 when ref is 64 lowercase hex digits, else 0. */
int kb_taskstore_ref_ok(const char *ref);

/* Gives sub (which names sub->task_ref) its task: checks that packed is
 * the task ref names, unpacks it and puts sub->code into its
 * submission_file entry. Returns 0, -EBADMSG (the bytes are not that
 * task, or not a Task), -EINVAL (sub has a task already or no code file
 * to fill) or -ENOMEM, with errstr set. */
int kb_taskstore_attach(Kb__Submission *sub, const uint8_t *packed, size_t len,
			char *errstr, size_t errstr_size);

/* Stores packed under its reference (SET NX). Returns 0 or -EIO. */
int kb_taskstore_put(redisContext *c, const uint8_t *packed, size_t len,
		     const char *ref, char *errstr, size_t errstr_size);

typedef struct kb_taskstore kb_taskstore;

/* cache_dir: the directory of cached copies (created when missing); NULL
 * keeps copies in memory only. Returns NULL on out of memory. */
kb_taskstore *kb_taskstore_new(const char *cache_dir);
void kb_taskstore_destroy(kb_taskstore *ts);

/* Resolves sub->task_ref into sub->task (kb_taskstore_attach) from the
 * caches or, failing them, through c (which may be NULL when no store is
 * reachable). Returns 0; -ENOENT when the store has no such task (the
 * job cannot run: the platform's fault); -EIO when the store could not be
 * asked (try again later); -EBADMSG or -EINVAL as kb_taskstore_attach;
 * -ENOMEM. */
int kb_taskstore_resolve(kb_taskstore *ts, redisContext *c, Kb__Submission *sub,
			 char *errstr, size_t errstr_size);

#endif
