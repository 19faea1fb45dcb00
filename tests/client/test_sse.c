/* kb_sse: the server-sent events parser, fed every way a network can cut
 * a stream. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "sse.h"
#include "kb_check_main.h"

#define MAX_EV 16

struct got {
	int n;
	char type[MAX_EV][32];
	char data[MAX_EV][256];
	char id[MAX_EV][32];
	int stop_at; /* return 7 on this event (1-based), 0 never */
};

static int collect(const struct kb_sse_event *ev, void *opaque)
{
	struct got *g = opaque;

	ck_assert_int_lt(g->n, MAX_EV);
	ck_assert_uint_eq(strlen(ev->data), ev->data_len);
	snprintf(g->type[g->n], sizeof(g->type[0]), "%s", ev->type);
	snprintf(g->data[g->n], sizeof(g->data[0]), "%s", ev->data);
	snprintf(g->id[g->n], sizeof(g->id[0]), "%s", ev->id);
	g->n++;
	return g->stop_at == g->n ? 7 : 0;
}

/* Parses s fed in chunks of size step (0: all at once). */
static void parse(const char *s, size_t step, struct got *g)
{
	struct kb_sse *p = kb_sse_new(0, collect, g);
	size_t len = strlen(s), i = 0;

	ck_assert_ptr_nonnull(p);
	if (!step)
		step = len ? len : 1;
	while (i < len) {
		size_t n = len - i < step ? len - i : step;
		ck_assert_int_eq(kb_sse_feed(p, s + i, n), 0);
		i += n;
	}
	kb_sse_finish(p);
	ck_assert_uint_eq(kb_sse_count(p), (unsigned long)g->n);
	kb_sse_destroy(p);
}

/* The same events whatever the chunk size, from 1 byte up. */
static void parse_all_splits(const char *s, struct got *want)
{
	memset(want, 0, sizeof(*want));
	parse(s, 0, want);
	for (size_t step = 1; step <= strlen(s); step++) {
		struct got g = {0};
		parse(s, step, &g);
		ck_assert_int_eq(g.n, want->n);
		for (int i = 0; i < g.n; i++) {
			ck_assert_str_eq(g.type[i], want->type[i]);
			ck_assert_str_eq(g.data[i], want->data[i]);
			ck_assert_str_eq(g.id[i], want->id[i]);
		}
	}
}

START_TEST(lf_events)
{
	struct got g;

	parse_all_splits("event: status\ndata: {\"stage\":\"compiling\"}\n\n"
			 "event: result\ndata: {\"ok\":true}\n\n",
			 &g);
	ck_assert_int_eq(g.n, 2);
	ck_assert_str_eq(g.type[0], "status");
	ck_assert_str_eq(g.data[0], "{\"stage\":\"compiling\"}");
	ck_assert_str_eq(g.type[1], "result");
	ck_assert_str_eq(g.data[1], "{\"ok\":true}");
}
END_TEST

START_TEST(crlf_and_cr)
{
	struct got g;

	parse_all_splits("event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r"
			 "event: c\ndata: 3\r\n\n",
			 &g);
	ck_assert_int_eq(g.n, 3);
	ck_assert_str_eq(g.type[0], "a");
	ck_assert_str_eq(g.data[0], "1");
	ck_assert_str_eq(g.type[1], "b");
	ck_assert_str_eq(g.data[1], "2");
	ck_assert_str_eq(g.type[2], "c");
	ck_assert_str_eq(g.data[2], "3");
}
END_TEST

START_TEST(cr_lf_split_across_chunks)
{
	/* "\r" ends one chunk and "\n" starts the next: one line end. Were it
	 * two, the empty line would dispatch "a" alone. */
	struct got g = {0};
	struct kb_sse *p = kb_sse_new(0, collect, &g);

	ck_assert_int_eq(kb_sse_feed(p, "data: a\r", 8), 0);
	ck_assert_int_eq(kb_sse_feed(p, "\ndata: b\r", 9), 0);
	ck_assert_int_eq(kb_sse_feed(p, "\n", 1), 0);
	ck_assert_int_eq(g.n, 0);
	ck_assert_int_eq(kb_sse_feed(p, "\r", 1), 0);
	ck_assert_int_eq(g.n, 1); /* a lone CR already ends the empty line */
	ck_assert_int_eq(kb_sse_feed(p, "\n", 1), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.data[0], "a\nb");
	ck_assert_str_eq(g.type[0], "message");
	kb_sse_destroy(p);
}
END_TEST

START_TEST(multi_line_data)
{
	struct got g;

	parse_all_splits(
		"event: result\ndata: {\"a\":1,\ndata:  \"b\":2}\ndata\n\n",
		&g);
	ck_assert_int_eq(g.n, 1);
	/* One leading space is dropped, a second kept; "data" alone adds an
	 * empty line. */
	ck_assert_str_eq(g.data[0], "{\"a\":1,\n \"b\":2}\n");
}
END_TEST

START_TEST(comments_and_keepalives)
{
	struct got g;

	parse_all_splits(
		": keep-alive\n\n:\n\n: ping\nevent: status\n: inside\n"
		"data: x\n\n",
		&g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.type[0], "status");
	ck_assert_str_eq(g.data[0], "x");
}
END_TEST

START_TEST(no_data_no_event)
{
	struct got g;

	/* An event type alone is dropped, and does not leak into the next. */
	parse_all_splits("event: status\n\ndata: y\n\n", &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.type[0], "message");
	ck_assert_str_eq(g.data[0], "y");
}
END_TEST

START_TEST(unknown_events_and_fields)
{
	struct got g;

	parse_all_splits("event: progress-v9\nfoo: bar\nretry: 1000\ndata:z\n\n"
			 "id: 17\nevent: status\ndata: s\n\ndata: t\n\n",
			 &g);
	ck_assert_int_eq(g.n, 3);
	ck_assert_str_eq(g.type[0], "progress-v9");
	ck_assert_str_eq(g.data[0], "z");
	ck_assert_str_eq(g.id[0], "");
	ck_assert_str_eq(g.id[1], "17");
	ck_assert_str_eq(g.id[2], "17"); /* the last id persists */
}
END_TEST

START_TEST(bom_and_empty_data)
{
	struct got g;

	parse_all_splits("\xEF\xBB\xBF"
			 "data:\n\ndata: \xC3\xA9\n\n",
			 &g);
	ck_assert_int_eq(g.n, 2);
	ck_assert_str_eq(g.data[0], "");
	ck_assert_str_eq(g.data[1], "\xC3\xA9");
}
END_TEST

START_TEST(incomplete_event_discarded)
{
	struct got g = {0};
	struct kb_sse *p = kb_sse_new(0, collect, &g);

	const char *part = "data: done\n\nevent: result\ndata: {\"par";
	ck_assert_int_eq(kb_sse_feed(p, part, strlen(part)), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(kb_sse_finish(p), 1);
	ck_assert_int_eq(g.n, 1);
	kb_sse_destroy(p);

	memset(&g, 0, sizeof(g));
	p = kb_sse_new(0, collect, &g);
	ck_assert_int_eq(kb_sse_feed(p, "data: x\n\n", 9), 0);
	ck_assert_int_eq(kb_sse_finish(p), 0);
	kb_sse_destroy(p);
}
END_TEST

START_TEST(callback_stops)
{
	struct got g = {.stop_at = 1};
	struct kb_sse *p = kb_sse_new(0, collect, &g);

	ck_assert_int_eq(kb_sse_feed(p, "data: 1\n\ndata: 2\n\n", 18), 7);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(kb_sse_feed(p, "data: 3\n\n", 9), -EINVAL);
	kb_sse_destroy(p);
}
END_TEST

START_TEST(size_limit)
{
	struct got g = {0};
	struct kb_sse *p = kb_sse_new(16, collect, &g);
	char big[64];

	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(kb_sse_feed(p, "data: 0123456789\n", 17), 0);
	ck_assert_int_eq(kb_sse_feed(p, "data: 0123456789\n", 17), -EMSGSIZE);
	kb_sse_destroy(p);

	/* A line that never ends is bounded too. */
	p = kb_sse_new(16, collect, &g);
	ck_assert_int_eq(kb_sse_feed(p, big, 10), 0);
	ck_assert_int_eq(kb_sse_feed(p, big, sizeof(big)), -EMSGSIZE);
	kb_sse_destroy(p);
	kb_sse_destroy(NULL);
}
END_TEST

START_TEST(upstream_stream)
{
	/* What upstream KernelBot's _stream_submission_response writes. */
	struct got g;

	parse_all_splits(
		"event: status\ndata: {\"status\": \"processing\", \"elapsed_time\": 0.0}\n\n"
		"event: status\ndata: {\"status\": \"processing\", \"elapsed_time\": 15.01}\n\n"
		"event: result\ndata: {\"status\": \"success\", \"results\": [], "
		"\"reports\": [\"ok\"]}\n\n",
		&g);
	ck_assert_int_eq(g.n, 3);
	ck_assert_str_eq(g.type[2], "result");
	ck_assert_str_eq(
		g.data[2],
		"{\"status\": \"success\", \"results\": [], \"reports\": [\"ok\"]}");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("client_sse");
	TCase *tc = tcase_create("sse");

	tcase_add_test(tc, lf_events);
	tcase_add_test(tc, crlf_and_cr);
	tcase_add_test(tc, cr_lf_split_across_chunks);
	tcase_add_test(tc, multi_line_data);
	tcase_add_test(tc, comments_and_keepalives);
	tcase_add_test(tc, no_data_no_event);
	tcase_add_test(tc, unknown_events_and_fields);
	tcase_add_test(tc, bom_and_empty_data);
	tcase_add_test(tc, incomplete_event_discarded);
	tcase_add_test(tc, callback_stops);
	tcase_add_test(tc, size_limit);
	tcase_add_test(tc, upstream_stream);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
