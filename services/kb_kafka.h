/* kb_kafka: the producer and consumer every service uses, on librdkafka.
 *
 * Producer: idempotent (enable.idempotence), acks=all. kb_producer_send()
 * waits for the delivery report, so a caller that gets 0 knows the broker
 * has the message; kb_producer_send_async() is for best-effort events
 * (progress) whose loss is harmless.
 *
 * Consumer: a group member with auto-commit off and auto.offset.reset =
 * earliest. The caller commits a message's offset explicitly, after the
 * work it triggers is durable elsewhere (at-least-once).
 *
 * extra: optional NULL-terminated list of "key", "value" pairs applied to
 * the librdkafka configuration last (e.g. "session.timeout.ms", "6000").
 *
 * Errors: functions return 0 or a negative errno-style code and write a
 * message into the caller's errstr buffer.
 * Thread-safety: a producer may be used from several threads; a consumer
 * from one thread at a time.
 */
#ifndef KB_KAFKA_H
#define KB_KAFKA_H

#include <stddef.h>
#include <stdint.h>

typedef struct kb_producer kb_producer;
typedef struct kb_consumer kb_consumer;

/* Topic names. */
#define KB_TOPIC_RESULTS "kb.results"
#define KB_TOPIC_DLQ "kb.dlq"
#define KB_TOPIC_SUBMISSIONS_PREFIX "kb.submissions."

/* Writes "kb.submissions.<gpu>" into buf. Returns 0, -ENAMETOOLONG, or
 * -EINVAL when gpu is empty or has characters a topic name cannot hold
 * (anything but [A-Za-z0-9._-]). */
int kb_topic_submissions(char *buf, size_t size, const char *gpu);

kb_producer *kb_producer_new(const char *brokers, const char *client_id,
			     const char *const *extra, char *errstr,
			     size_t errstr_size);

/* Produces one message and waits up to timeout_ms for its delivery report.
 * Returns 0 once acknowledged, -ETIMEDOUT, or -EIO with errstr set. */
int kb_producer_send(kb_producer *p, const char *topic, const void *key,
		     size_t key_len, const void *value, size_t value_len,
		     int timeout_ms, char *errstr, size_t errstr_size);

/* kb_producer_send, and where the broker put the message: *partition and
 * *offset (either may be NULL) once acknowledged. */
int kb_producer_send_at(kb_producer *p, const char *topic, const void *key,
			size_t key_len, const void *value, size_t value_len,
			int timeout_ms, int32_t *partition, int64_t *offset,
			char *errstr, size_t errstr_size);

/* The cluster's id (Kafka's cluster.id; a restarted kb-devbroker is a
 * new cluster with a new id), waiting up to timeout_ms for metadata.
 * Returns 0 or -EIO with errstr set. */
int kb_producer_cluster_id(kb_producer *p, char *buf, size_t size,
			   int timeout_ms, char *errstr, size_t errstr_size);

/* The partitions of topic (*n, at most max written into parts), asking
 * the cluster up to timeout_ms. Returns 0 or -EIO with errstr set. */
int kb_producer_partitions(kb_producer *p, const char *topic, int32_t *parts,
			   int max, int *n, int timeout_ms, char *errstr,
			   size_t errstr_size);

/* The first offset still in a partition's log (*low) and the next one to
 * be written (*high), asking the leader up to timeout_ms. Returns 0 or
 * -EIO with errstr set. */
int kb_producer_watermarks(kb_producer *p, const char *topic, int32_t partition,
			   int64_t *low, int64_t *high, int timeout_ms,
			   char *errstr, size_t errstr_size);

/* Queues one message without waiting. Returns 0 if queued, -EIO if not. */
int kb_producer_send_async(kb_producer *p, const char *topic, const void *key,
			   size_t key_len, const void *value, size_t value_len);

/* Serves delivery reports of async sends; call now and then. */
void kb_producer_poll(kb_producer *p, int timeout_ms);

/* Waits up to timeout_ms for every queued message. Returns 0 or -ETIMEDOUT. */
int kb_producer_flush(kb_producer *p, int timeout_ms);

/* Flushes for up to 5 s, then frees. NULL is a no-op. */
void kb_producer_destroy(kb_producer *p);

/* One consumed message. Owned by the consumer until kb_message_release(). */
typedef struct kb_message {
	const char *topic;
	int32_t partition;
	int64_t offset;
	const void *key;
	size_t key_len;
	const void *value;
	size_t value_len;
	void *impl; /* rd_kafka_message_t * */
} kb_message;

kb_consumer *kb_consumer_new(const char *brokers, const char *group,
			     const char *const *topics, size_t ntopics,
			     const char *const *extra, char *errstr,
			     size_t errstr_size);

/* Waits up to timeout_ms. Returns 1 with *msg filled (release it), 0 when
 * nothing arrived (including partition-EOF and transient broker errors,
 * which are logged), or a negative code on a fatal error. */
int kb_consumer_poll(kb_consumer *c, int timeout_ms, kb_message *msg);

void kb_message_release(kb_message *msg);

/* Synchronously commits msg->offset + 1 for its partition. Returns 0 or
 * -EIO with errstr set. */
int kb_consumer_commit(kb_consumer *c, const kb_message *msg, char *errstr,
		       size_t errstr_size);

/* Commits msg->offset itself (not the next one) with metadata: marks the
 * message as being worked on, so that if this consumer dies before
 * kb_consumer_commit(), the member that gets the partition next starts at
 * msg again and finds the mark (kb_consumer_committed). Synchronous.
 * Returns 0 or -EIO with errstr set. */
int kb_consumer_mark(kb_consumer *c, const kb_message *msg,
		     const char *metadata, char *errstr, size_t errstr_size);

/* The group's committed offset of msg's partition (-1: none) and its
 * metadata (NUL-terminated, cut at meta_size - 1). Asks the broker, up to
 * timeout_ms. Returns 0 or -EIO with errstr set. */
int kb_consumer_committed(kb_consumer *c, const kb_message *msg,
			  int64_t *offset, char *meta, size_t meta_size,
			  int timeout_ms, char *errstr, size_t errstr_size);

/* Pauses fetching on every partition assigned now or later, until
 * kb_consumer_resume(): the caller keeps polling (so the member stays in
 * the group and takes part in rebalances) while no message arrives. A
 * message already fetched when the pause began is not returned; its
 * partition is rewound so that it comes again after the resume. Returns 0
 * or -EIO. */
int kb_consumer_pause(kb_consumer *c);
int kb_consumer_resume(kb_consumer *c);

/* 1 when msg's partition is assigned to this member now, else 0. */
int kb_consumer_assigned(kb_consumer *c, const kb_message *msg);

/* Assignment changes seen so far (assigned and revoked); a caller that
 * notes it before a wait can tell whether the group moved meanwhile. */
unsigned long kb_consumer_generation(kb_consumer *c);

/* Total lag of the group on its assigned partitions, or -1 if unknown. */
int64_t kb_consumer_lag(kb_consumer *c);

/* Leaves the group (so partitions move at once) and frees. NULL is a no-op. */
void kb_consumer_destroy(kb_consumer *c);

/* The kb.dlq value of msg (a packed kb.DeadLetter: its topic, partition,
 * offset, key and value, and reason), in *out (malloc'd, the caller
 * frees) of *len bytes; send it under msg's key. Returns 0 or -ENOMEM
 * (*out NULL). Pure and thread-safe. */
int kb_dead_letter_pack(const kb_message *msg, const char *reason,
			uint8_t **out, size_t *len);

#endif
