#include "profile_collect.h"

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb_util.h"
#include "pbutil.h"
#include "profile.h"

/* Kernel launches shown in the summary; the trace has them all. */
#define SUMMARY_LAUNCHES 4
/* Seconds for one `ncu --import` of a report. */
#define IMPORT_TIMEOUT_S 120.0
/* The longest ncu message quoted in Profile.error. */
#define NCU_MSG_MAX 600

static void set_error(Kb__Profile *pf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_error(Kb__Profile *pf, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kb__pb_set_str(&pf->error, buf);
}

/* ---- where ncu is ------------------------------------------------------ */

static int is_script(const char *path)
{
	char head[2];
	FILE *f = fopen(path, "rb");
	int script = f && fread(head, 1, 2, f) == 2 && head[0] == '#' &&
		     head[1] == '!';

	if (f)
		fclose(f);
	return script;
}

/* The newest <pattern> match (version order) that is an executable, or 0. */
static int newest(const char *pattern, char *out, size_t size)
{
	glob_t g;
	const char *best = NULL;

	if (glob(pattern, 0, NULL, &g) != 0)
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++)
		if (access(g.gl_pathv[i], X_OK) == 0 &&
		    (!best || strverscmp(g.gl_pathv[i], best) > 0))
			best = g.gl_pathv[i];
	int found = best && realpath(best, out) && strlen(out) < size;

	globfree(&g);
	return found;
}

int kb_profile_ncu_locate(const char *ncu, const char *opt_dir, char *out,
			  size_t size)
{
	char dir[PATH_MAX], pattern[PATH_MAX + 32], real[PATH_MAX];
	const char *slash = strrchr(ncu, '/');

	if (strlen(ncu) >= size)
		return -1;
	snprintf(out, size, "%s", ncu);
	if (!slash || !is_script(ncu))
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - ncu), ncu);
	snprintf(pattern, sizeof(pattern), "%s/../nsight-compute*/ncu", dir);
	int found = newest(pattern, real, sizeof(real));

	if (!found && opt_dir) {
		snprintf(pattern, sizeof(pattern), "%s/*/ncu", opt_dir);
		found = newest(pattern, real, sizeof(real));
	}
	if (!found || strcmp(real, ncu) == 0 || strlen(real) >= size)
		return 0;
	snprintf(out, size, "%s", real);
	return 1;
}

/* ---- the Profile ------------------------------------------------------- */

static void append_summary(Kb__Profile *pf, const char *note)
{
	const char *s = pf->summary ? pf->summary : "";

	kb__pb_take_str(&pf->summary,
			kb__xasprintf("%s%s%s", s, s[0] ? "\n" : "", note));
}

/* Runs `ncu --import` of the report (as text or CSV); *out malloc'd.
 * Returns 0, or -1 with why set. */
static int import(const struct kb_profile_ctx *c, int csv, char **out,
		  size_t *len, char *why, size_t why_size)
{
	struct kb_argv argv = {0};
	struct kb_sandbox_result r;
	char err[256] = "";
	int rc;

	kb_profile_ncu_import_argv(&argv, c->ncu, csv);
	memset(&r, 0, sizeof(r));
	rc = c->exec(c->exec_ctx, &argv, KB_PROFILE_DETAILS_MAX, &r, err,
		     sizeof(err));
	kb_argv_free(&argv);
	*out = NULL;
	if (rc < 0 || r.infra_error) {
		snprintf(why, why_size, "%s", err[0] ? err : r.infra_msg);
		kb_sandbox_result_clear(&r);
		return -1;
	}
	if (!r.exited || r.exit_code != 0 || !r.out || r.out_dropped) {
		char *msg = kb_profile_ncu_errors(r.out, NCU_MSG_MAX);

		if (r.out_dropped)
			snprintf(why, why_size,
				 "its %s details exceed %zu "
				 "bytes",
				 csv ? "CSV" : "text", KB_PROFILE_DETAILS_MAX);
		else
			snprintf(why, why_size, "exit status %d%s%s",
				 r.exited ? r.exit_code : -1, msg ? ": " : "",
				 msg ? msg : "");
		free(msg);
		kb_sandbox_result_clear(&r);
		return -1;
	}
	*out = r.out;
	*len = r.out_len;
	r.out = NULL;
	kb_sandbox_result_clear(&r);
	return 0;
}

/* Zips files[0..n) into pf->trace if the archive fits c->trace_max.
 * Returns 0, 1 when it did not fit (*size set), or -1 on a zip error. */
static int try_trace(const struct kb_profile_ctx *c,
		     const struct kb_profile_file *files, size_t n,
		     Kb__Profile *pf, size_t *size, char *why, size_t why_size)
{
	uint8_t *zip;
	size_t len;

	if (kb_profile_zip(files, n, &zip, &len, why, why_size) < 0)
		return -1;
	*size = len;
	if (len > c->trace_max) {
		free(zip);
		return 1;
	}
	pf->trace.data = zip;
	pf->trace.len = len;
	return 0;
}

static void no_report(const struct kb_sandbox_result *run, Kb__Profile *pf,
		      int rc)
{
	char *msg = kb_profile_ncu_errors(run->out, NCU_MSG_MAX);

	if (!msg)
		msg = kb_profile_ncu_errors(run->err, NCU_MSG_MAX);
	if (rc == -ENOENT &&
	    ((run->out && strstr(run->out, "No kernels were profiled")) ||
	     (run->err && strstr(run->err, "No kernels were profiled"))))
		set_error(pf,
			  "Nsight Compute profiled no kernel: none of "
			  "custom_kernel's launches in the profiled calls "
			  "matched the kernel filter%s%s",
			  msg ? "; ncu: " : "", msg ? msg : "");
	else if (rc == -ENOENT)
		set_error(pf, "Nsight Compute wrote no report%s%s",
			  msg ? ": " : " (see the run's output)",
			  msg ? msg : "");
	else
		set_error(pf, "the profiler's report cannot be read: %s",
			  rc == -EFBIG    ? "larger than 64 MiB"
			  : rc == -ELOOP  ? "a symbolic link"
			  : rc == -EINVAL ? "not a regular file"
					  : strerror(-rc));
	free(msg);
}

/* The trace: the report with its details, else the details alone. */
static void ncu_trace(const struct kb_profile_ctx *c, const char *rep,
		      size_t rep_len, const char *txt, size_t txt_len,
		      const char *csv, size_t csv_len, Kb__Profile *pf)
{
	struct kb_profile_file f[3] = {
		{KB_PROFILE_NCU_TXT, txt, txt_len},
		{KB_PROFILE_NCU_CSV, csv, csv_len},
		{KB_PROFILE_NCU_REP, rep, rep_len},
	};
	char why[256] = "", note[512];
	size_t full = 0, small = 0;
	int rc = try_trace(c, f, 3, pf, &full, why, sizeof(why));

	if (rc == 1)
		rc = try_trace(c, f, 2, pf, &small, why, sizeof(why));
	else if (rc == 0)
		return;
	if (rc < 0) {
		set_error(pf, "the trace could not be packed: %s", why);
		return;
	}
	if (rc == 0) {
		snprintf(note, sizeof(note),
			 "(%s is left out of the trace: "
			 "the archive with it is %zu bytes, over the %zu bytes "
			 "a result may carry; the trace holds %s and %s)",
			 KB_PROFILE_NCU_REP, full, c->trace_max,
			 KB_PROFILE_NCU_TXT, KB_PROFILE_NCU_CSV);
		append_summary(pf, note);
		return;
	}
	set_error(pf,
		  "no trace: even the details alone are %zu bytes, over "
		  "the %zu bytes a result may carry",
		  small, c->trace_max);
}

void kb_profile_collect_ncu(const struct kb_profile_ctx *c,
			    const struct kb_sandbox_result *run,
			    Kb__Profile *pf)
{
	char *rep = NULL, *txt = NULL, *csv = NULL, *sol;
	size_t rep_len, txt_len = 0, csv_len = 0, launches = 0;
	char why[512] = "";
	int rc;

	kb__pb_set_str(&pf->profiler, KB_PROFILE_NCU_NAME);
	if (kb_profile_ncu_denied(run->out) ||
	    kb_profile_ncu_denied(run->err)) {
		kb__pb_set_str(&pf->error, kb_profile_ncu_denied_msg());
		return;
	}
	rc = kb_jobdir_step_read(c->jd, KB_PROFILE_NCU_REP, KB_PROFILE_REP_MAX,
				 &rep, &rep_len);
	if (rc < 0) {
		no_report(run, pf, rc);
		return;
	}
	if (import(c, 1, &csv, &csv_len, why, sizeof(why)) < 0 ||
	    import(c, 0, &txt, &txt_len, why, sizeof(why)) < 0) {
		set_error(pf, "Nsight Compute could not read its report: %s",
			  why);
		goto out;
	}
	sol = kb_profile_sol_from_csv(csv, csv_len, SUMMARY_LAUNCHES,
				      &launches);
	if (!sol)
		sol = kb_profile_sol_from_text(txt, txt_len, SUMMARY_LAUNCHES,
					       &launches);
	kb__pb_take_str(&pf->summary,
			sol ? sol
			    : kb__xstrdup("(the report has no GPU Speed "
					  "Of Light Throughput section)"));
	ncu_trace(c, rep, rep_len, txt, txt_len, csv, csv_len, pf);
out:
	free(rep);
	free(txt);
	free(csv);
}

static const char *result_value(const Kb__RunResult *rr, const char *key)
{
	for (size_t i = 0; i < rr->n_result; i++)
		if (strcmp(rr->result[i]->key, key) == 0)
			return rr->result[i]->value;
	return NULL;
}

void kb_profile_collect_torch(const struct kb_profile_ctx *c,
			      const Kb__RunResult *rr, Kb__Profile *pf)
{
	const char *value = result_value(rr, "benchmark.0.report");
	char *table = kb_profile_report_decode(value), *trace = NULL;
	size_t trace_len = 0, size = 0;
	struct kb_profile_file f[2];
	char why[256] = "", note[256];
	int rc;

	kb__pb_set_str(&pf->profiler, KB_PROFILE_TORCH_NAME);
	if (!table) {
		kb__pb_set_str(&pf->error,
			       value ? "the harness's profile "
				       "(benchmark.0.report) is not base64"
				     : "the harness reported no profile "
				       "(benchmark.0.report): the run ended "
				       "before the profiled calls, or the "
				       "problem's harness does not profile");
		return;
	}
	kb__pb_take_str(&pf->summary, table);
	f[0] = (struct kb_profile_file){KB_PROFILE_TORCH_TABLE, pf->summary,
					strlen(pf->summary)};
	/* Our harness's Chrome trace; upstream's eval.py leaves none. */
	rc = kb_jobdir_step_read(c->jd, KB_PROFILE_TORCH_TRACE,
				 KB_PROFILE_REP_MAX, &trace, &trace_len);
	f[1] = (struct kb_profile_file){KB_PROFILE_TORCH_TRACE_ZIP, trace,
					trace_len};
	rc = try_trace(c, f, rc == 0 ? 2 : 1, pf, &size, why, sizeof(why));
	if (rc == 1 && trace) {
		snprintf(note, sizeof(note),
			 "(%s is left out of the trace: "
			 "%zu bytes with it, over the %zu bytes a result may "
			 "carry)",
			 KB_PROFILE_TORCH_TRACE_ZIP, size, c->trace_max);
		rc = try_trace(c, f, 1, pf, &size, why, sizeof(why));
		if (rc == 0)
			append_summary(pf, note);
	}
	if (rc == 1)
		set_error(pf,
			  "no trace: %zu bytes, over the %zu bytes a result "
			  "may carry",
			  size, c->trace_max);
	else if (rc < 0)
		set_error(pf, "the trace could not be packed: %s", why);
	free(trace);
}
