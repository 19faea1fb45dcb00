/* kb_dc_text: see text.h. */
#include "text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/results.h"
#include "kb_mode.h"
#include "kb_util.h"

/* How far back a cut looks for a line break or a space. */
#define CUT_LOOKBACK 200
#define DEFAULT_NOTE " […]"
#define WORD_NOTE "\n[the word continues in the next message]"
#define CODE_OVERHEAD 8 /* "```\n" + "```" + a newline */
/* Budgets inside the short report, so that the whole stays under 2000. */
#define REPORT_BLOCK_MAX 700
#define REPORT_ERROR_MAX 300

/* Bytes of the well-formed UTF-8 sequence at p (1..4), or 0. */
static size_t seq_len(const char *p, size_t left)
{
	for (size_t k = 1; k <= 4 && k <= left; k++)
		if (kb_utf8_valid(p, k))
			return k;
	return 0;
}

static size_t units_of(const char *p, size_t k)
{
	(void)p;
	return k == 4 ? 2 : 1;
}

size_t kb_dc_text_units(const char *s)
{
	size_t u = 0, n = s ? strlen(s) : 0;

	for (size_t i = 0; i < n;) {
		size_t k = seq_len(s + i, n - i);
		if (!k)
			k = 1; /* invalid byte: count it, move on */
		u += units_of(s + i, k);
		i += k;
	}
	return u;
}

/* Byte offset in s (length n) after which max units are used up, never
 * inside a sequence. */
static size_t offset_for_units(const char *s, size_t n, size_t max)
{
	size_t u = 0, i = 0;

	while (i < n) {
		size_t k = seq_len(s + i, n - i);
		if (!k)
			k = 1;
		if (u + units_of(s + i, k) > max)
			break;
		u += units_of(s + i, k);
		i += k;
	}
	return i;
}

char *kb_dc_text_clean(const char *s, size_t len, size_t max_units,
		       int no_ticks)
{
	struct kb_buf b = {0};

	if (kb_buf_append(&b, "", 0) < 0)
		return NULL;
	for (size_t i = 0; s && i < len;) {
		size_t k = seq_len(s + i, len - i);
		const char *piece = s + i;
		size_t plen = k;
		if (k == 0) {
			if (s[i] == '\0') { /* dropped */
				i++;
				continue;
			}
			piece = "\xEF\xBF\xBD";
			plen = 3;
			k = 1;
		} else if (no_ticks && s[i] == '`') {
			piece = "'";
		}
		if (kb_buf_append(&b, piece, plen) < 0) {
			kb_buf_free(&b);
			return NULL;
		}
		i += k;
	}
	if (max_units && kb_dc_text_units(b.data) > max_units) {
		/* One unit for the ellipsis. */
		size_t cut = offset_for_units(b.data, b.len, max_units - 1);
		b.len = cut;
		b.data[cut] = '\0';
		if (kb_buf_append(&b, "…", strlen("…")) < 0) {
			kb_buf_free(&b);
			return NULL;
		}
	}
	return b.data;
}

/* The cut point for s[0..n) within budget units: after the last '\n' (or
 * else ' ') in the last CUT_LOOKBACK units. Returns the byte offset of
 * that break character, or lim itself with *hard = 1. */
static size_t find_cut(const char *s, size_t n, size_t budget, int *hard)
{
	size_t lim = offset_for_units(s, n, budget);
	size_t floor_ = lim > CUT_LOOKBACK ? lim - CUT_LOOKBACK : 0;
	size_t sp = 0;
	int have_sp = 0;

	*hard = 0;
	if (lim >= n)
		return n;
	/* A break exactly at lim is fine too: the character there is
	 * dropped, not kept. */
	for (size_t i = lim + 1; i-- > floor_ && i > 0;) {
		if (s[i] == '\n')
			return i;
		if (s[i] == ' ' && !have_sp) {
			sp = i;
			have_sp = 1;
		}
	}
	if (have_sp)
		return sp;
	*hard = 1;
	return lim;
}

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

char *kb_dc_text_fit(const char *s, size_t max, const char *note)
{
	size_t n = strlen(s), cut, nu;
	int hard;

	if (kb_dc_text_units(s) <= max)
		return strdup(s);
	if (!note)
		note = DEFAULT_NOTE;
	nu = kb_dc_text_units(note);
	cut = find_cut(s, n, max > nu ? max - nu : 0, &hard);
	while (cut > 0 && (s[cut - 1] == ' ' || s[cut - 1] == '\n'))
		cut--;
	char *out = malloc(cut + strlen(note) + 1);
	if (!out)
		return NULL;
	memcpy(out, s, cut);
	strcpy(out + cut, note);
	return out;
}

static int push(char ***parts, size_t *n, size_t *cap, char *p)
{
	if (!p)
		return -ENOMEM;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4;
		char **np = realloc(*parts, nc * sizeof(*np));
		if (!np) {
			free(p);
			return -ENOMEM;
		}
		*parts = np;
		*cap = nc;
	}
	(*parts)[(*n)++] = p;
	return 0;
}

void kb_dc_text_free_parts(char **parts, size_t n)
{
	for (size_t i = 0; parts && i < n; i++)
		free(parts[i]);
	free(parts);
}

int kb_dc_text_split(const char *s, size_t max, char ***parts, size_t *n)
{
	size_t cap = 0, len = strlen(s), wn = kb_dc_text_units(WORD_NOTE);
	const char *p = s;
	int rc = 0;

	*parts = NULL;
	*n = 0;
	while (rc == 0) {
		size_t left = len - (size_t)(p - s);
		int hard;
		if (kb_dc_text_units(p) <= max) {
			size_t keep = left;
			while (keep > 0 &&
			       (p[keep - 1] == ' ' || p[keep - 1] == '\n'))
				keep--;
			if (keep || *n == 0)
				rc = push(parts, n, &cap, dupn(p, keep));
			break;
		}
		size_t cut = find_cut(p, left, max, &hard);
		if (hard) {
			cut = offset_for_units(p, left,
					       max > wn ? max - wn : 1);
			if (cut == 0)
				cut = seq_len(p, left) ? seq_len(p, left) : 1;
			char *part = malloc(cut + strlen(WORD_NOTE) + 1);
			if (part) {
				memcpy(part, p, cut);
				strcpy(part + cut, WORD_NOTE);
			}
			rc = push(parts, n, &cap, part);
			p += cut;
		} else {
			size_t keep = cut;
			while (keep > 0 &&
			       (p[keep - 1] == ' ' || p[keep - 1] == '\n'))
				keep--;
			if (keep)
				rc = push(parts, n, &cap, dupn(p, keep));
			p += cut + 1; /* drop the break character */
		}
	}
	if (rc != 0) {
		kb_dc_text_free_parts(*parts, *n);
		*parts = NULL;
		*n = 0;
		return -ENOMEM;
	}
	return 0;
}

int kb_dc_text_pack(const char *title, const char *const *lines, size_t n,
		    int code, size_t max, char ***msgs, size_t *nmsgs)
{
	struct kb_buf cur = {0};
	size_t cap = 0, cur_units = 0, open_units,
	       overhead = code ? CODE_OVERHEAD : 0;
	int rc = 0, have_lines = 0;

	*msgs = NULL;
	*nmsgs = 0;
#define START()                                                                \
	do {                                                                   \
		kb_buf_free(&cur);                                             \
		rc |= kb_buf_append(&cur, "", 0);                              \
		cur_units = 0;                                                 \
		have_lines = 0;                                                \
		if (title && *nmsgs == 0) {                                    \
			rc |= kb_buf_printf(&cur, "%s\n", title);              \
			cur_units += kb_dc_text_units(title) + 1;              \
		}                                                              \
		if (code)                                                      \
			rc |= kb_buf_append(&cur, "```\n", 4);                 \
	} while (0)
#define FLUSH()                                                                \
	do {                                                                   \
		if (code)                                                      \
			rc |= kb_buf_append(&cur, "```", 3);                   \
		rc |= push(msgs, nmsgs, &cap,                                  \
			   strdup(cur.data ? cur.data : ""));                  \
	} while (0)

	START();
	open_units = cur_units;
	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t room = max > overhead + open_units
				      ? max - overhead - open_units
				      : 1;
		char *line =
			kb_dc_text_fit(lines[i], room > 1 ? room - 1 : 1, NULL);
		size_t lu;
		if (!line) {
			rc = -ENOMEM;
			break;
		}
		lu = kb_dc_text_units(line) + 1;
		if (have_lines && cur_units + lu + overhead > max) {
			FLUSH();
			START();
		}
		rc |= kb_buf_printf(&cur, "%s\n", line);
		cur_units += lu;
		have_lines = 1;
		free(line);
	}
	if (rc == 0)
		FLUSH();
#undef START
#undef FLUSH
	kb_buf_free(&cur);
	if (rc != 0) {
		kb_dc_text_free_parts(*msgs, *nmsgs);
		*msgs = NULL;
		*nmsgs = 0;
		return -ENOMEM;
	}
	return 0;
}

void kb_dc_fmt_seconds(double s, char *out, size_t size)
{
	static const struct {
		double scale;
		const char *unit;
	} units[] = {{1e9, "ns"}, {1e6, "µs"}, {1e3, "ms"}, {1, "s"}};
	size_t i = 0;
	double v = s * 1e9;

	if (!isfinite(s) || s < 0) {
		snprintf(out, size, "?");
		return;
	}
	while (i + 1 < sizeof(units) / sizeof(units[0]) &&
	       s * units[i].scale >= 999.5)
		i++;
	v = s * units[i].scale;
	if (i == 0 && v >= 100)
		snprintf(out, size, "%.0f %s", v, units[i].unit);
	else
		snprintf(out, size,
			 v < 9.995   ? "%.2f %s"
			 : v < 99.95 ? "%.1f %s"
				     : "%.0f %s",
			 v, units[i].unit);
}

const char *kb_dc_mode_label(const char *mode)
{
	if (kb_mode_parse(mode) == KB_MODE_LEADERBOARD)
		return "ranked";
	return mode ? mode : "?";
}

/* ---- submission messages ---- */

static const char *stage_label(const char *stage)
{
	static const char *const names[][2] = {
		{"queued", "Queued"},       {"compiling", "Compiling"},
		{"testing", "Testing"},     {"benchmarking", "Benchmarking"},
		{"profiling", "Profiling"}, {"ranked_run", "Ranked run"},
		{"done", "Done"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i][0], stage) == 0)
			return names[i][1];
	return stage;
}

void kb_dc_progress_stage(struct kb_dc_progress *p, const char *stage,
			  const char *message, long position, int64_t now_ms)
{
	size_t last = p->nstages ? p->nstages - 1 : 0;

	if (!p->nstages || strcmp(p->stages[last], stage) != 0) {
		if (p->nstages == KB_DC_STAGES_MAX) {
			/* Keep the first stages; the newest replaces the last. */
			p->nstages--;
		}
		last = p->nstages++;
		snprintf(p->stages[last], sizeof(p->stages[last]), "%s", stage);
		p->stage_at_ms[last] = now_ms;
	}
	snprintf(p->message, sizeof(p->message), "%s", message ? message : "");
	p->position = position;
}

static int put_head(struct kb_buf *b, const struct kb_dc_sub_head *h)
{
	char *file = kb_dc_text_clean(h->file_name ? h->file_name : "",
				      h->file_name ? strlen(h->file_name) : 0,
				      64, 1);
	int rc = kb_buf_printf(
		b, "**Submission #%llu** · `%s` on **%s** · %s · `%s`\n",
		(unsigned long long)h->id, h->lb, h->gpu,
		kb_dc_mode_label(h->mode), file ? file : "?");
	free(file);
	return rc;
}

char *kb_dc_render_progress(const struct kb_dc_progress *p, int64_t now_ms)
{
	struct kb_buf b = {0};
	int rc = put_head(&b, &p->head);

	for (size_t i = 0; i < p->nstages && rc == 0; i++) {
		int last = i + 1 == p->nstages;
		int64_t end = last ? now_ms : p->stage_at_ms[i + 1];
		double secs = (double)(end - p->stage_at_ms[i]) / 1e3;
		if (secs < 0)
			secs = 0;
		if (!last) {
			rc = kb_buf_printf(&b, "✅ %s (%.1f s)\n",
					   stage_label(p->stages[i]), secs);
			continue;
		}
		rc = kb_buf_printf(&b, "⏳ %s", stage_label(p->stages[i]));
		if (rc == 0 && strcmp(p->stages[i], "queued") == 0 &&
		    p->position > 0)
			rc = kb_buf_printf(&b, " — position %ld", p->position);
		if (rc == 0 && p->message[0] &&
		    strcasecmp(p->message, stage_label(p->stages[i])) != 0 &&
		    strcasecmp(p->message, p->stages[i]) != 0) {
			char *m = kb_dc_text_clean(p->message,
						   strlen(p->message), 150, 0);
			rc = m ? kb_buf_printf(&b, " — %s", m) : -ENOMEM;
			free(m);
		}
		if (rc == 0)
			rc = kb_buf_printf(&b, " (%.1f s)\n", secs);
	}
	if (rc == 0 && p->nstages == 0)
		rc = kb_buf_printf(&b, "⏳ Submitting…\n");
	if (rc != 0) {
		kb_buf_free(&b);
		return NULL;
	}
	return b.data;
}

static const char *kv(const Kb__RunResult *rr, const char *key)
{
	for (size_t i = 0; i < rr->n_result; i++)
		if (strcmp(rr->result[i]->key, key) == 0)
			return rr->result[i]->value;
	return NULL;
}

static const char *kv_item(const Kb__RunResult *rr, const char *kind, long i,
			   const char *field)
{
	char key[96];

	snprintf(key, sizeof(key), "%s.%ld.%s", kind, i, field);
	return kv(rr, key);
}

static const char *run_label(const char *key)
{
	if (strcmp(key, "test") == 0)
		return "Tests";
	if (strcmp(key, "benchmark") == 0)
		return "Benchmarks";
	if (strcmp(key, "profile") == 0)
		return "Profile";
	if (strcmp(key, "leaderboard") == 0)
		return "Ranked run";
	if (strcmp(key, "private") == 0)
		return "Secret run";
	return key;
}

static const char *verdict_line(Kb__Verdict v)
{
	switch (v) {
	case KB__VERDICT__VERDICT_PASSED:
		return "✅ **Passed**";
	case KB__VERDICT__VERDICT_FAILED:
		return "❌ **Failed**";
	case KB__VERDICT__VERDICT_COMPILE_ERROR:
		return "❌ **Compile error**";
	case KB__VERDICT__VERDICT_TIMEOUT:
		return "⏱️ **Timed out**";
	case KB__VERDICT__VERDICT_CRASHED:
		return "💥 **Crashed**";
	case KB__VERDICT__VERDICT_INFRA_ERROR:
		return "⚠️ **Infrastructure error** (not your fault; it does not count)";
	case KB__VERDICT__VERDICT_SUSPECT:
		return "⚠️ **Suspect timing** (faster than the hardware allows; not ranked)";
	default:
		return "❔ **Unknown verdict**";
	}
}

static const char *medal(long rank)
{
	return rank == 1   ? "🥇 First place"
	       : rank == 2 ? "🥈 Second place"
	       : rank == 3 ? "🥉 Third place"
			   : NULL;
}

static int put_placement(struct kb_buf *b, const struct kb_dc_placement *pl,
			 const char *gpu)
{
	char now[32], prev[32];

	if (!pl->known)
		return kb_buf_printf(
			b, "Placement: the ranking is not updated yet; "
			   "see `/leaderboard show` in a moment.\n");
	kb_dc_fmt_seconds(pl->best_score, now, sizeof(now));
	kb_dc_fmt_seconds(pl->prev_score, prev, sizeof(prev));
	if (!pl->is_best)
		return kb_buf_printf(b,
				     "Successful, but your best on %s stays %s "
				     "(rank #%ld).\n",
				     gpu, now, pl->rank);
	int rc = medal(pl->rank)
			 ? kb_buf_printf(b, "%s on %s", medal(pl->rank), gpu)
			 : kb_buf_printf(b, "Rank **#%ld** on %s", pl->rank,
					 gpu);
	if (rc == 0 && pl->first_success)
		rc = kb_buf_printf(b,
				   " · 🍾 your first successful submission");
	else if (rc == 0 && pl->had_prev)
		rc = kb_buf_printf(b, " · personal best (was %s)", prev);
	return rc ? rc : kb_buf_printf(b, "\n");
}

/* One line per run: tests passed, benchmarks' range, the first failure. */
static int put_run(struct kb_buf *b, const Kb__RunResult *rr)
{
	const char *label = run_label(rr->key);
	const char *tc = kv(rr, "test-count"), *bc = kv(rr, "benchmark-count");
	int rc = 0;

	if (strcmp(rr->key, "private") == 0)
		return kb_buf_printf(b, "%s %s %s\n", rr->passed ? "✅" : "❌",
				     label, rr->passed ? "passed" : "failed");
	if (rr->timed_out)
		return kb_buf_printf(b, "⏱️ %s timed out after %.1f s\n",
				     label, rr->duration_s);
	if (!rr->success && !tc && !bc)
		return kb_buf_printf(b, "💥 %s crashed (exit code %d%s)\n",
				     label, rr->exit_code,
				     rr->signal ? ", killed by a signal" : "");
	if (tc) {
		long n = strtol(tc, NULL, 10), pass = 0, first_fail = -1;
		for (long i = 0; i < n; i++) {
			const char *st = kv_item(rr, "test", i, "status");
			if (st && strcmp(st, "pass") == 0)
				pass++;
			else if (first_fail < 0)
				first_fail = i;
		}
		rc = kb_buf_printf(b, "%s %s: %ld/%ld passed\n",
				   pass == n && rr->passed ? "✅" : "❌", label,
				   pass, n);
		if (rc == 0 && first_fail >= 0) {
			const char *spec =
				kv_item(rr, "test", first_fail, "spec");
			const char *err =
				kv_item(rr, "test", first_fail, "error");
			if (!err)
				err = kv_item(rr, "test", first_fail,
					      "message");
			char *cs = kb_dc_text_clean(spec ? spec : "",
						    spec ? strlen(spec) : 0,
						    120, 1);
			char *ce = kb_dc_text_clean(err ? err : "",
						    err ? strlen(err) : 0,
						    REPORT_ERROR_MAX, 1);
			if (!cs || !ce)
				rc = -ENOMEM;
			else
				rc = kb_buf_printf(
					b, "> first failure: `%s`%s%s\n", cs,
					*ce ? ": " : "", ce);
			free(cs);
			free(ce);
		}
	}
	if (rc == 0 && bc) {
		long n = strtol(bc, NULL, 10);
		double lo = INFINITY, hi = 0;
		long have = 0;
		for (long i = 0; i < n; i++) {
			const char *m = kv_item(rr, "benchmark", i, "mean");
			double v = m ? strtod(m, NULL) / 1e9 : NAN;
			if (!isfinite(v))
				continue;
			have++;
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		char a[32], z[32];
		kb_dc_fmt_seconds(lo, a, sizeof(a));
		kb_dc_fmt_seconds(hi, z, sizeof(z));
		if (have == 0)
			rc = kb_buf_printf(
				b, "%s %s: %ld benchmarks, no timings\n",
				rr->passed ? "✅" : "❌", label, n);
		else if (have == 1)
			rc = kb_buf_printf(b, "%s %s: 1 benchmark, mean %s\n",
					   rr->passed ? "✅" : "❌", label, a);
		else
			rc = kb_buf_printf(
				b, "%s %s: %ld benchmarks, means %s … %s\n",
				rr->passed ? "✅" : "❌", label, have, a, z);
	}
	if (rc == 0 && !tc && !bc)
		rc = kb_buf_printf(b, "%s %s %s\n", rr->passed ? "✅" : "❌",
				   label, rr->passed ? "passed" : "failed");
	return rc;
}

/* A program's output in a code block, cut to REPORT_BLOCK_MAX. */
static int put_block(struct kb_buf *b, const char *title, const char *text)
{
	if (!text || !*text)
		return 0;
	char *c = kb_dc_text_clean(text, strlen(text), 0, 1);
	char *f = c ? kb_dc_text_fit(c, REPORT_BLOCK_MAX, "\n[… cut]") : NULL;
	int rc = f ? kb_buf_printf(b, "%s\n```\n%s\n```\n", title, f) : -ENOMEM;
	free(c);
	free(f);
	return rc;
}

char *kb_dc_render_result(const struct kb_dc_sub_head *h, const Kb__Result *r,
			  const struct kb_dc_placement *pl, int attached,
			  size_t max)
{
	struct kb_buf b = {0};
	int rc = put_head(&b, h);
	char score[32];

	/* The outcome as the API's job tells it (results.h): a ranked
	 * submission that passed but was not ranked says so, as upstream. */
	struct kb_gw_job job;
	kb_gw_job_of_result(r, h->id, &job);
	if (rc == 0)
		rc = kb_buf_printf(
			&b, "%s",
			strcmp(job.status, "failed") == 0 &&
					r->verdict ==
						KB__VERDICT__VERDICT_PASSED
				? "❌ **Not ranked**"
				: verdict_line(r->verdict));
	if (rc == 0 && r->has_score) {
		kb_dc_fmt_seconds(r->score, score, sizeof(score));
		rc = kb_buf_printf(&b, " — score **%s**", score);
	}
	if (rc == 0 && job.error[0]) {
		char *e = kb_dc_text_clean(job.error, strlen(job.error),
					   REPORT_ERROR_MAX, 0);
		rc = e ? kb_buf_printf(&b, " — %s", e) : -ENOMEM;
		free(e);
	}
	if (rc == 0)
		rc = kb_buf_printf(&b, "\n");
	if (rc == 0 && pl && r->has_score)
		rc = put_placement(&b, pl, h->gpu);
	if (rc == 0 && r->compile && !r->compile->success)
		rc = put_block(&b, "Compiler output:",
			       r->compile->stderr && *r->compile->stderr
				       ? r->compile->stderr
				       : r->compile->stdout);
	for (size_t i = 0; rc == 0 && i < r->n_runs; i++)
		rc = put_run(&b, r->runs[i]);
	/* The stderr of the first run that crashed, as a hint. */
	for (size_t i = 0; rc == 0 && i < r->n_runs; i++) {
		const Kb__RunResult *rr = r->runs[i];
		if (!rr->success && !rr->timed_out &&
		    strcmp(rr->key, "private") != 0) {
			rc = put_block(&b,
				       "Program output (stderr):", rr->stderr);
			break;
		}
	}
	if (rc == 0 && attached)
		rc = kb_buf_printf(&b, "The full report is attached.");
	if (rc != 0) {
		kb_buf_free(&b);
		return NULL;
	}
	char *out = kb_dc_text_fit(
		b.data, max,
		attached ? "\n[… cut; the full report is attached]"
			 : "\n[… cut]");
	kb_buf_free(&b);
	return out;
}

char *kb_dc_render_ranked_line(const char *discord_user_id,
			       const struct kb_dc_sub_head *h,
			       const struct kb_dc_placement *pl, double score)
{
	char t[32], who[96];
	struct kb_buf b = {0};
	int rc;

	kb_dc_fmt_seconds(score, t, sizeof(t));
	if (discord_user_id)
		snprintf(who, sizeof(who), "<@%s>'s", discord_user_id);
	else
		snprintf(who, sizeof(who), "A");
	rc = kb_buf_printf(&b, "%s submission #%llu to `%s`:\n", who,
			   (unsigned long long)h->id, h->lb);
	if (rc == 0 && (!pl || !pl->known))
		rc = kb_buf_printf(&b, "> successful on %s: %s", h->gpu, t);
	else if (rc == 0 && !pl->is_best)
		rc = kb_buf_printf(&b, "> successful on %s: %s", h->gpu, t);
	else if (rc == 0 && pl->first_success && !medal(pl->rank))
		rc = kb_buf_printf(
			&b,
			"> 🍾 first successful submission on %s: %s (#%ld)",
			h->gpu, t, pl->rank);
	else if (rc == 0 && medal(pl->rank))
		rc = kb_buf_printf(&b, "> %s on %s: %s", medal(pl->rank),
				   h->gpu, t);
	else if (rc == 0)
		rc = kb_buf_printf(&b, "> personal best on %s: %s (#%ld)",
				   h->gpu, t, pl->rank);
	if (rc != 0) {
		kb_buf_free(&b);
		return NULL;
	}
	return b.data;
}

char *kb_dc_render_refusal(const char *what, const char *detail)
{
	char *d = kb_dc_text_clean(detail ? detail : "",
				   detail ? strlen(detail) : 0, 1500, 0);
	char *out = NULL;

	if (d && asprintf(&out, "❌ %s: %s", what, d) < 0)
		out = NULL;
	free(d);
	return out;
}

/* ---- top 3 ---- */

const char *kb_dc_snowflake_of(const char *user_id)
{
	static const char prefix[] = "discord-";

	if (!user_id || strncmp(user_id, prefix, sizeof(prefix) - 1) != 0)
		return NULL;
	const char *s = user_id + sizeof(prefix) - 1;
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return NULL;
	return s;
}

static long rank_in(const struct kb_dc_podium *p, const char *uid)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->user_id[i], uid) == 0)
			return (long)i + 1;
	return 0;
}

static int put_who(struct kb_buf *b, const struct kb_dc_podium *p, size_t i)
{
	const char *sf = kb_dc_snowflake_of(p->user_id[i]);

	if (sf)
		return kb_buf_printf(b, "<@%s>", sf);
	char *n = kb_dc_text_clean(p->user_name[i], strlen(p->user_name[i]), 64,
				   1);
	int rc = n ? kb_buf_printf(b, "**%s**", n) : -ENOMEM;
	free(n);
	return rc;
}

char *kb_dc_render_announce(const char *lb, const char *gpu,
			    const struct kb_dc_podium *before,
			    const struct kb_dc_podium *after)
{
	static const char *const medals[] = {"🥇", "🥈", "🥉"};
	int new_first = after->n > 0 &&
			(before->n == 0 ||
			 strcmp(after->user_id[0], before->user_id[0]) != 0);
	int changed = new_first;
	struct kb_buf b = {0};
	char t[32];
	int rc;

	for (size_t i = 0; i < after->n; i++)
		changed |= !rank_in(before, after->user_id[i]);
	for (size_t i = 0; i < before->n; i++)
		changed |= !rank_in(after, before->user_id[i]);
	if (!changed)
		return NULL;
	rc = kb_buf_printf(&b, "🏆 **Top 3 of `%s` on %s**\n", lb, gpu);
	if (rc == 0 && new_first) {
		kb_dc_fmt_seconds(after->score[0], t, sizeof(t));
		rc = put_who(&b, after, 0);
		if (rc == 0)
			rc = kb_buf_printf(&b, " takes #1 with %s!\n", t);
	}
	for (size_t i = new_first ? 1 : 0; rc == 0 && i < after->n; i++) {
		if (rank_in(before, after->user_id[i]))
			continue;
		kb_dc_fmt_seconds(after->score[i], t, sizeof(t));
		rc = put_who(&b, after, i);
		if (rc == 0)
			rc = kb_buf_printf(
				&b, " enters the top 3 at #%zu with %s.\n",
				i + 1, t);
	}
	for (size_t i = 0; rc == 0 && i < before->n; i++) {
		if (rank_in(after, before->user_id[i]))
			continue;
		rc = put_who(&b, before, i);
		if (rc == 0)
			rc = kb_buf_printf(&b, " leaves the top 3.\n");
	}
	for (size_t i = 0; rc == 0 && i < after->n; i++) {
		kb_dc_fmt_seconds(after->score[i], t, sizeof(t));
		rc = kb_buf_printf(&b, "%s ", medals[i]);
		if (rc == 0)
			rc = put_who(&b, after, i);
		if (rc == 0)
			rc = kb_buf_printf(&b, " — %s\n", t);
	}
	if (rc != 0) {
		kb_buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* ---- #!POPCORN directives ---- */

int kb_dc_directive(const char *code, size_t len, const char *key, char *out,
		    size_t size)
{
	const char *p = code, *end = code + len;
	size_t kn = strlen(key);

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end, *q = p;
		size_t n;
		if ((size_t)(le - q) > 10 && memcmp(q, "#!POPCORN", 9) == 0)
			q += 9;
		else if ((size_t)(le - q) > 11 &&
			 memcmp(q, "//!POPCORN", 10) == 0)
			q += 10;
		else
			q = NULL;
		if (q && (*q == ' ' || *q == '\t')) {
			while (q < le && (*q == ' ' || *q == '\t'))
				q++;
			n = 0;
			while (q + n < le && q[n] != ' ' && q[n] != '\t' &&
			       q[n] != '\r')
				n++;
			int match = (n == kn && strncasecmp(q, key, n) == 0) ||
				    (strcmp(key, "gpu") == 0 && n == 4 &&
				     strncasecmp(q, "gpus", 4) == 0);
			if (match) {
				q += n;
				while (q < le && (*q == ' ' || *q == '\t'))
					q++;
				n = 0;
				while (q + n < le && q[n] != ' ' &&
				       q[n] != '\t' && q[n] != '\r' &&
				       q[n] != ',')
					n++;
				if (n > 0) {
					if (n >= size)
						return -EINVAL;
					memcpy(out, q, n);
					out[n] = '\0';
					return 1;
				}
			}
		}
		p = eol ? eol + 1 : end;
	}
	return 0;
}
