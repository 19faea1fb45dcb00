#include "profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#include <zip.h>

#include "kb_util.h"

/* ---- the request and the command line -------------------------------- */

static int set_msg(char *msg, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int set_msg(char *msg, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kb_vseterr(msg, size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int kb_profile_request_check(const Kb__ProfileRequest *req, char *msg,
			     size_t msg_size)
{
	static const char *const bases[] = {"function", "demangled", "mangled"};
	const char *name = req ? req->ncu_kernel_name : NULL;
	const char *base = req ? req->ncu_kernel_name_base : NULL;
	int base_ok = 0;

	if (name && name[0]) {
		if (strlen(name) > KB_PROFILE_KERNEL_NAME_MAX)
			return set_msg(msg, msg_size,
				       "ncu_kernel_name is longer than %d "
				       "bytes",
				       KB_PROFILE_KERNEL_NAME_MAX);
		if (has_control(name))
			return set_msg(msg, msg_size,
				       "ncu_kernel_name holds "
				       "control characters");
		if (strcmp(name, "regex:") == 0)
			return set_msg(msg, msg_size,
				       "ncu_kernel_name "
				       "\"regex:\" needs an expression");
	}
	if (base && base[0]) {
		for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
			base_ok |= strcmp(base, bases[i]) == 0;
		if (!base_ok)
			return set_msg(msg, msg_size,
				       "ncu_kernel_name_base "
				       "must be function, demangled or "
				       "mangled");
	}
	if (req && req->ncu_launch_count > KB_PROFILE_LAUNCH_MAX)
		return set_msg(msg, msg_size,
			       "ncu_launch_count %u is above "
			       "the limit of %d",
			       req->ncu_launch_count, KB_PROFILE_LAUNCH_MAX);
	return 0;
}

static void push_opt(struct kb_argv *out, const char *opt, const char *val)
{
	/* "--opt=value": a value starting with '-' stays a value. */
	size_t n = strlen(opt) + strlen(val) + 2;
	char *s = malloc(n);

	if (!s)
		abort();
	snprintf(s, n, "%s=%s", opt, val);
	kb_argv_push(out, s);
	free(s);
}

void kb_profile_ncu_argv(struct kb_argv *out, const char *ncu,
			 const Kb__ProfileRequest *req, int child_range,
			 char *const *app)
{
	char count[16];

	snprintf(count, sizeof(count), "%u",
		 req && req->ncu_launch_count ? req->ncu_launch_count
					      : KB_PROFILE_LAUNCH_COUNT);
	kb_argv_push(out, ncu);
	/* No config file from the working directory or HOME: only what
	 * this command line says. */
	push_opt(out, "--config-file", "off");
	/* The harness's child is a process of its own. */
	push_opt(out, "--target-processes", "all");
	if (child_range) {
		push_opt(out, "--profile-from-start", "off");
	} else {
		kb_argv_push(out, "--nvtx");
		push_opt(out, "--nvtx-include", "custom_kernel/");
	}
	push_opt(out, "--set", "full");
	push_opt(out, "--import-source", "yes");
	push_opt(out, "--launch-count", count);
	push_opt(out, "--replay-mode", "kernel");
	push_opt(out, "--cache-control", "all");
	/* The clocks stay as the device runs them: the worker's later
	 * timings must not find them locked by a profile. */
	push_opt(out, "--clock-control", "none");
	if (req && req->ncu_kernel_name && req->ncu_kernel_name[0])
		push_opt(out, "--kernel-name", req->ncu_kernel_name);
	if (req && req->ncu_kernel_name_base && req->ncu_kernel_name_base[0])
		push_opt(out, "--kernel-name-base", req->ncu_kernel_name_base);
	push_opt(out, "--export", KB_PROFILE_NCU_EXPORT);
	kb_argv_push(out, "--force-overwrite");
	kb_argv_push(out, "--");
	for (size_t i = 0; app && app[i]; i++)
		kb_argv_push(out, app[i]);
}

void kb_profile_ncu_import_argv(struct kb_argv *out, const char *ncu, int csv)
{
	kb_argv_push(out, ncu);
	push_opt(out, "--config-file", "off");
	push_opt(out, "--import", KB_PROFILE_NCU_REP);
	push_opt(out, "--page", "details");
	if (csv)
		kb_argv_push(out, "--csv");
}

/* ---- ncu's messages ---------------------------------------------------- */

int kb_profile_ncu_denied(const char *text)
{
	return text && strstr(text, "ERR_NVGPUCTRPERM") != NULL;
}

const char *kb_profile_ncu_denied_msg(void)
{
	return "this host does not let the sandbox read GPU performance "
	       "counters (Nsight Compute: ERR_NVGPUCTRPERM): the NVIDIA "
	       "driver restricts profiling to administrators "
	       "(RmProfilingAdminOnly: 1 in /proc/driver/nvidia/params), and "
	       "submissions run as an unprivileged user without "
	       "capabilities. An operator must load the nvidia kernel module "
	       "with NVreg_RestrictProfilingToAdminUsers=0 (a line \"options "
	       "nvidia NVreg_RestrictProfilingToAdminUsers=0\" in "
	       "/etc/modprobe.d/, then reload the driver or reboot; see "
	       "https://developer.nvidia.com/ERR_NVGPUCTRPERM). Your "
	       "submission ran and was checked; no profile was taken";
}

char *kb_profile_ncu_errors(const char *text, size_t max)
{
	static const char tag[] = "==ERROR==";
	char *out = NULL;
	size_t len = 0;

	for (const char *p = text ? strstr(text, tag) : NULL; p;
	     p = strstr(p, tag)) {
		const char *s = p + sizeof(tag) - 1;
		const char *e = strchr(s, '\n');
		size_t n;

		while (*s == ' ')
			s++;
		n = e ? (size_t)(e - s) : strlen(s);
		if (!out) {
			out = calloc(1, max + 1);
			if (!out)
				return NULL;
		}
		if (len && len + 2 < max) {
			memcpy(out + len, "; ", 2);
			len += 2;
		}
		if (n > max - len)
			n = max - len;
		memcpy(out + len, s, n);
		len += n;
		p = s + n;
	}
	return out;
}

/* ---- a growing text ---------------------------------------------------- */

struct text {
	char *s;
	size_t len, cap;
	int oom;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->oom)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		char *p;

		while (t->len + n + 1 > cap)
			cap *= 2;
		p = realloc(t->s, cap);
		if (!p) {
			t->oom = 1;
			return;
		}
		t->s = p;
		t->cap = cap;
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = '\0';
}

static void putf(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void putf(struct text *t, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(t, buf,
		    (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static char *text_done(struct text *t)
{
	if (t->oom || !t->s) {
		free(t->s);
		return NULL;
	}
	return t->s;
}

/* ---- the CSV page ------------------------------------------------------ */

#define SOL_SECTION "GPU Speed Of Light Throughput"
#define CSV_COLS 64

/* Splits one CSV record at *p (quoted fields, "" inside quotes, commas)
 * into cols, unquoted, in place. Returns the number of fields and moves *p
 * past the record's line end. */
static size_t csv_record(char **p, char *end, char *cols[CSV_COLS])
{
	char *s = *p;
	size_t n = 0;

	while (s < end) {
		char *w = s, *start = s;
		int quoted = *s == '"';

		if (quoted) {
			start = w = ++s;
			while (s < end) {
				if (*s == '"' && s + 1 < end && s[1] == '"') {
					*w++ = '"';
					s += 2;
				} else if (*s == '"') {
					s++;
					break;
				} else {
					*w++ = *s++;
				}
			}
		}
		while (s < end && *s != ',' && *s != '\n' && *s != '\r')
			*w++ = *s++;
		if (n < CSV_COLS)
			cols[n++] = start;
		if (s < end && *s == ',') {
			*w = '\0';
			s++;
			continue;
		}
		/* The terminator may be the line end itself: step over it
		 * before it is overwritten. */
		if (w == s && s < end)
			s++;
		*w = '\0';
		break;
	}
	while (s < end && (*s == '\r' || *s == '\n'))
		s++;
	*p = s;
	return n;
}

enum {
	C_ID,
	C_KERNEL,
	C_BLOCK,
	C_GRID,
	C_SECTION,
	C_NAME,
	C_UNIT,
	C_VALUE,
	C_N
};

static int csv_header(char *cols[], size_t n, int idx[C_N])
{
	static const char *const names[C_N] = {"ID",           "Kernel Name",
					       "Block Size",   "Grid Size",
					       "Section Name", "Metric Name",
					       "Metric Unit",  "Metric Value"};

	for (int k = 0; k < C_N; k++) {
		idx[k] = -1;
		for (size_t i = 0; i < n; i++)
			if (strcmp(cols[i], names[k]) == 0)
				idx[k] = (int)i;
		if (idx[k] < 0)
			return -1;
	}
	return 0;
}

static void more_launches(struct text *t, size_t shown, size_t all)
{
	if (all > shown)
		putf(t,
		     "\n(%zu more kernel launch%s in the report: see %s and "
		     "%s in the trace)\n",
		     all - shown, all - shown == 1 ? "" : "es",
		     KB_PROFILE_NCU_TXT, KB_PROFILE_NCU_REP);
}

char *kb_profile_sol_from_csv(const char *csv, size_t len, size_t max_launches,
			      size_t *launches)
{
	char *buf = malloc(len + 1), *p, *end, *cols[CSV_COLS];
	char last_id[64] = "";
	struct text t = {0};
	int idx[C_N], have_header = 0;
	size_t n, shown = 0;

	*launches = 0;
	if (!buf)
		return NULL;
	memcpy(buf, csv, len);
	buf[len] = '\0';
	p = buf;
	end = buf + len;
	while (p < end) {
		n = csv_record(&p, end, cols);
		if (!have_header) {
			/* ncu may print its own lines before the table. */
			have_header = csv_header(cols, n, idx) == 0;
			continue;
		}
		/* Rows of other sections, and the section's rule rows
		 * (advice without a metric), are the trace's. */
		if ((size_t)idx[C_VALUE] >= n ||
		    strcmp(cols[idx[C_SECTION]], SOL_SECTION) != 0 ||
		    !cols[idx[C_NAME]][0])
			continue;
		if (strcmp(cols[idx[C_ID]], last_id) != 0) {
			snprintf(last_id, sizeof(last_id), "%s",
				 cols[idx[C_ID]]);
			if ((*launches)++ >= max_launches)
				continue;
			shown++;
			putf(&t, "%s[%s] %s %sx%s\n", shown > 1 ? "\n" : "",
			     cols[idx[C_ID]], cols[idx[C_KERNEL]],
			     cols[idx[C_GRID]], cols[idx[C_BLOCK]]);
			putf(&t, "    %-32s %-12s %s\n", "Metric Name",
			     "Metric Unit", "Metric Value");
		}
		if (*launches > max_launches)
			continue;
		putf(&t, "    %-32s %-12s %s\n", cols[idx[C_NAME]],
		     cols[idx[C_UNIT]], cols[idx[C_VALUE]]);
	}
	free(buf);
	if (!*launches) {
		free(t.s);
		return NULL;
	}
	more_launches(&t, shown, *launches);
	return text_done(&t);
}

/* ---- the text page ----------------------------------------------------- */

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* A kernel's header line in ncu's details page is indented by two spaces;
 * the sections and their rows below it by four. */
static int kernel_line(const char *s, size_t n)
{
	return n > 3 && s[0] == ' ' && s[1] == ' ' && s[2] != ' ';
}

char *kb_profile_sol_from_text(const char *text, size_t len,
			       size_t max_launches, size_t *launches)
{
	const char *p = text, *end = text + len;
	struct text t = {0};
	int in_sol = 0, rows = 0;
	size_t shown = 0;

	*launches = 0;
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);

		if (kernel_line(p, n)) {
			in_sol = 0;
			if ((*launches)++ < max_launches) {
				shown++;
				put(&t, shown > 1 ? "\n" : "", shown > 1);
				put(&t, p + 2, n - 2);
				put(&t, "\n", 1);
			}
		} else if (memmem(p, n, "Section: ", 9)) {
			in_sol = memmem(p, n, SOL_SECTION,
					sizeof(SOL_SECTION) - 1) != NULL;
		} else if (in_sol && blank(p, n)) {
			in_sol = 0;
		} else if (in_sol && *launches && *launches <= max_launches) {
			put(&t, p, n);
			put(&t, "\n", 1);
			rows++;
		}
		p = e ? e + 1 : end;
	}
	if (!rows) {
		free(t.s);
		*launches = 0;
		return NULL;
	}
	more_launches(&t, shown, *launches);
	return text_done(&t);
}

/* ---- torch's table ----------------------------------------------------- */

char *kb_profile_report_decode(const char *value)
{
	size_t n = value ? strlen(value) : 0, bin_len = 0;
	char *b64, *bin;

	if (!n)
		return NULL;
	b64 = malloc(n + 1);
	bin = malloc(n + 1);
	if (!b64 || !bin) {
		free(b64);
		free(bin);
		return NULL;
	}
	/* Upstream's eval.py encodes with altchars "+*". */
	for (size_t i = 0; i <= n; i++)
		b64[i] = value[i] == '*' ? '/' : value[i];
	if (sodium_base642bin((unsigned char *)bin, n, b64, n, NULL, &bin_len,
			      NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
		free(b64);
		free(bin);
		return NULL;
	}
	free(b64);
	bin[bin_len] = '\0';
	return bin;
}

/* ---- the archive ------------------------------------------------------- */

static int zip_fail(zip_error_t *ze, const char *what, char *msg, size_t size)
{
	snprintf(msg, size, "zip: %s: %s", what, zip_error_strerror(ze));
	return -EIO;
}

static int zip_take(zip_source_t *src, uint8_t **out, size_t *out_len,
		    char *msg, size_t msg_size)
{
	zip_stat_t st;
	uint8_t *buf;
	zip_int64_t got;

	if (zip_source_stat(src, &st) < 0 || zip_source_open(src) < 0)
		return zip_fail(zip_source_error(src), "reading back", msg,
				msg_size);
	buf = malloc(st.size ? st.size : 1);
	if (!buf) {
		zip_source_close(src);
		return -ENOMEM;
	}
	got = zip_source_read(src, buf, st.size);
	zip_source_close(src);
	if (got < 0 || (zip_uint64_t)got != st.size) {
		free(buf);
		return zip_fail(zip_source_error(src), "reading back", msg,
				msg_size);
	}
	*out = buf;
	*out_len = st.size;
	return 0;
}

int kb_profile_zip(const struct kb_profile_file *files, size_t n, uint8_t **out,
		   size_t *out_len, char *msg, size_t msg_size)
{
	zip_error_t ze;
	zip_source_t *src;
	zip_t *za;
	int rc;

	*out = NULL;
	*out_len = 0;
	zip_error_init(&ze);
	src = zip_source_buffer_create(NULL, 0, 0, &ze);
	if (!src) {
		rc = zip_fail(&ze, "buffer", msg, msg_size);
		zip_error_fini(&ze);
		return rc;
	}
	za = zip_open_from_source(src, ZIP_TRUNCATE, &ze);
	if (!za) {
		rc = zip_fail(&ze, "open", msg, msg_size);
		zip_source_free(src);
		zip_error_fini(&ze);
		return rc;
	}
	zip_error_fini(&ze);
	zip_source_keep(src); /* survives zip_close: it holds the archive */
	for (size_t i = 0; i < n; i++) {
		zip_source_t *f =
			zip_source_buffer(za, files[i].data, files[i].len, 0);

		if (!f ||
		    zip_file_add(za, files[i].name, f, ZIP_FL_ENC_UTF_8) < 0) {
			rc = zip_fail(zip_get_error(za), files[i].name, msg,
				      msg_size);
			zip_source_free(f);
			zip_discard(za);
			zip_source_free(src);
			return rc;
		}
	}
	if (zip_close(za) < 0) {
		rc = zip_fail(zip_get_error(za), "close", msg, msg_size);
		zip_discard(za);
		zip_source_free(src);
		return rc;
	}
	rc = zip_take(src, out, out_len, msg, msg_size);
	zip_source_free(src);
	return rc;
}
