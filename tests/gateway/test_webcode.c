/* GET /web/lb/{lb}/code/{id} against a real kb-gateway (issue 35 item
 * 7b): a submission's code is shown only when its board's deadline has
 * passed and it is a ranked pass of that board (kb_gw_ranked_pass, the
 * export's rule), escaped; every other case is refused with a page that
 * says why. Results are written as the ranker writes them (as
 * test_export does). */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gw_env.h"
#include "kb_check_main.h"

#define CODE                                                                   \
	"float custom_kernel(const float *d, unsigned long n) "                \
	"{ return n < 2 && d ? d[0] : 0; } /* </pre><script>x</script> */\n"

static struct gw_env E;
static const char *const env[] = {
	"KB_PROBLEMS=" KB_GW_TEST_DIR "/data:" KB_GW_TEST_DIR "/export.yaml",
	"KB_MAX_QUEUED_PER_GPU=0",
	NULL,
};

static void result(uint64_t id, const char *verdict, const char *score)
{
	gw_redis_do(&E,
		    "HSET kb:sub:%llu status done stage done verdict %s "
		    "score %s done_ms 1",
		    (unsigned long long)id, verdict, score ? score : "");
}

static uint64_t admin_submit(const char *path, const char *cli)
{
	char hcli[128];
	size_t blen;
	snprintf(hcli, sizeof(hcli), "X-Popcorn-Cli-Id: %s", cli);
	char *mp =
		gw_multipart("B0und", "file", "k.c", CODE, strlen(CODE), &blen);
	const char *h[] = {"Authorization: Bearer " GW_ADMIN_TOKEN, hcli,
			   "Content-Type: multipart/form-data; boundary=B0und",
			   NULL};
	uint64_t id = gw_accepted(gw_req(&E, "POST", path, h, mp, blen));
	free(mp);
	return id;
}

/* GET /web/lb/<lb>/code/<id>: asserts the status and an HTML page that
 * contains want; returns nothing. */
static void page(const char *lb, const char *id, long status, const char *want)
{
	char path[256];

	snprintf(path, sizeof(path), "/web/lb/%s/code/%s", lb, id);
	struct gw_resp r = gw_req(&E, "GET", path, NULL, NULL, 0);
	ck_assert_msg(r.code == status, "%s: %ld, want %ld: %.400s", path,
		      r.code, status, r.body ? r.body : "");
	ck_assert_ptr_nonnull(strcasestr(r.headers, "Content-Type: text/html"));
	ck_assert_msg(strstr(r.body, want), "%s lacks %s: %.2000s", path, want,
		      r.body);
	/* Whatever the answer, the code's markup never reaches it raw. */
	ck_assert_ptr_null(strstr(r.body, "<script>x"));
	gw_resp_free(&r);
}

static void page_id(const char *lb, uint64_t id, long status, const char *want)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRIu64, id);
	page(lb, s, status, want);
}

START_TEST(code_page_rules)
{
	char alice[80], alice_id[40];

	E.extra_env = env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", alice, alice_id);
	const char *past = "/admin/submission/gw_past/CPU/leaderboard";
	uint64_t ok = admin_submit(past, alice);
	uint64_t failed = admin_submit(past, alice);
	uint64_t unscored = admin_submit(past, alice);
	uint64_t queued = admin_submit(past, alice);
	uint64_t test =
		admin_submit("/admin/submission/gw_past/CPU/test", alice);
	uint64_t live = gw_accepted(gw_submit(
		&E, "/submission/gw_live/CPU/leaderboard", alice, CODE));
	result(ok, "passed", "0.5");
	result(failed, "failed", "0.5");
	result(unscored, "passed", NULL);
	result(test, "passed", "0.5");
	result(live, "passed", "0.5");

	/* The ranked pass of a past board: its code, escaped. */
	page_id("gw_past", ok, 200, "return n &lt; 2 &amp;&amp; d");
	page_id("GW_PAST", ok, 200,
		"&lt;/pre&gt;&lt;script&gt;x&lt;/script&gt;");
	page_id("gw_past", ok, 200, "alice");

	/* Not a ranked pass: failed, unscored, still queued, a test run. */
	page_id("gw_past", failed, 404, "Only ranked, passing submissions");
	page_id("gw_past", unscored, 404, "Only ranked, passing submissions");
	page_id("gw_past", queued, 404, "Only ranked, passing submissions");
	page_id("gw_past", test, 404, "Only ranked, passing submissions");

	/* Before the deadline nothing is shown, not even a ranked pass. */
	page_id("gw_live", live, 403, "only after the board&#39;s deadline");
	/* A submission of another board, under this one's name. */
	page_id("gw_past", live, 404, "Only ranked, passing submissions");
	/* No such submission, board or id. */
	page("gw_past", "999999", 404, "Not found.");
	page("gw_past", "abc", 404, "no such submission");
	page("nope", "1", 404, "no public leaderboard");

	/* A deleted submission is gone from the page too. */
	gw_redis_do(&E, "HSET kb:sub:%llu status deleted",
		    (unsigned long long)ok);
	page_id("gw_past", ok, 404, "Not found.");

	int status = gw_env_stop_gateway(&E);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "kb-gateway did not exit 0 (status 0x%x); log %s", status,
		      E.log);
	gw_assert_log_clean(&E);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_webcode");
	TCase *tc = tcase_create("webcode");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, code_page_rules);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
