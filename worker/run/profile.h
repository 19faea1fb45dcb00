/* kb_profile: profile mode's pure parts -- the profiler's command line
 * from what the user asked for, the summary from what the profiler wrote,
 * the trace archive, and the words for a host that cannot profile.
 *
 * Profile mode runs the harness once per profiled benchmark case (run key
 * "profile.N", plan.h). On a CUDA worker the run is the harness under
 * Nsight Compute inside the sandbox (eval.c): ncu launches the harness and
 * follows its processes; the child that calls custom_kernel opens the
 * capture range (cudaProfilerStart, the harness's PROFILE request) around
 * the profiled calls, so only the submission's kernels are measured. ncu
 * writes its report into the run's scratch directory, where the submission
 * could have written too: the worker reads it only as data (jobdir.h:
 * O_NOFOLLOW, regular files, bounded), and has ncu itself, in the sandbox,
 * turn it into text and CSV. A forged report forges only the submitter's
 * own profile; nothing of it reaches a verdict or a score.
 *
 * Python runs report the torch profiler's table in benchmark.<i>.report
 * (upstream's key, base64 with the "+*" alphabet); ours also leave a
 * Chrome trace in the scratch directory.
 *
 * Everything here is free of I/O and thread-safe; strings returned are
 * malloc'd and owned by the caller.
 */
#ifndef KB_PROFILE_H
#define KB_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "build.h"
#include "kb.pb-c.h"

/* Names in the run's scratch directory and in the trace archive. */
#define KB_PROFILE_NCU_EXPORT "profile" /* ncu --export */
#define KB_PROFILE_NCU_REP "profile.ncu-rep"
#define KB_PROFILE_NCU_TXT "ncu-details.txt"
#define KB_PROFILE_NCU_CSV "ncu-details.csv"
#define KB_PROFILE_TORCH_TABLE "profile.txt"
#define KB_PROFILE_TORCH_TRACE "kbh_trace.0.json" /* the harness's, case 0 */
#define KB_PROFILE_TORCH_TRACE_ZIP "trace.json"

#define KB_PROFILE_NCU_NAME "Nsight Compute"
#define KB_PROFILE_TORCH_NAME "PyTorch"

/* ncu --launch-count when the request names none (upstream's). */
#define KB_PROFILE_LAUNCH_COUNT 10
#define KB_PROFILE_LAUNCH_MAX 100
#define KB_PROFILE_KERNEL_NAME_MAX 1024

/* The largest report file the worker reads. */
#define KB_PROFILE_REP_MAX ((size_t)64 << 20)
/* The largest text/CSV export kept. */
#define KB_PROFILE_DETAILS_MAX ((size_t)8 << 20)
/* Traces of all profile runs of one Result together: a Result is one
 * Kafka message, and librdkafka's and the brokers' default
 * message.max.bytes is 1,000,000 bytes; the rest of the Result (outputs
 * of 16 KiB per stream, the harness's keys) keeps the remainder. */
#define KB_PROFILE_TRACE_BUDGET ((size_t)640 * 1024)

/* What Profile.error says for a CPU problem. */
#define KB_PROFILE_NO_CPU_PROFILER                                             \
	"no profiler for CPU problems: profile mode ran the timed calls "      \
	"only (see the run's timings)"

/* Checks req (NULL: defaults). Returns 0, or -EINVAL with msg saying what
 * is wrong, in words for the user: a kernel name that is empty after
 * "regex:", too long or holds control characters; a name base other than
 * function, demangled or mangled; a launch count above
 * KB_PROFILE_LAUNCH_MAX. */
int kb_profile_request_check(const Kb__ProfileRequest *req, char *msg,
			     size_t msg_size);

/* Appends to out the ncu command that profiles app (argv of the harness
 * run, NULL-terminated): ncu = the ncu executable, req as checked above
 * (NULL: defaults), child_range = the harness opens the capture range
 * itself (cudaProfilerStart in its child: --profile-from-start off), else
 * upstream's NVTX range "custom_kernel". The report goes to
 * KB_PROFILE_NCU_EXPORT in the working directory. */
void kb_profile_ncu_argv(struct kb_argv *out, const char *ncu,
			 const Kb__ProfileRequest *req, int child_range,
			 char *const *app);

/* Appends the command that prints the report's details page (csv: as
 * CSV) on stdout. */
void kb_profile_ncu_import_argv(struct kb_argv *out, const char *ncu, int csv);

/* 1 if ncu's output (its stdout or stderr) says that the host refuses
 * performance counters to this user (ERR_NVGPUCTRPERM). */
int kb_profile_ncu_denied(const char *text);

/* Profile.error for a host that refuses counters: what happened and what
 * an operator must set. */
const char *kb_profile_ncu_denied_msg(void);

/* ncu's own "==ERROR==" lines of text, joined with "; " (at most max
 * bytes), or NULL when there are none. */
char *kb_profile_ncu_errors(const char *text, size_t max);

/* The speed-of-light summary from `ncu --import --page details --csv`
 * output: per kernel launch (at most max_launches; a line says how many
 * more) its name, grid and block, and the rows of the section "GPU Speed
 * Of Light Throughput". Columns are found by their header names, so
 * columns added by later ncu versions change nothing. Returns NULL when
 * the text holds no such rows (*launches = 0), or out of memory. */
char *kb_profile_sol_from_csv(const char *csv, size_t len, size_t max_launches,
			      size_t *launches);

/* The same from the text page (`--page details` without --csv): kernel
 * header lines and the "Section: GPU Speed Of Light Throughput" blocks.
 * For ncu versions whose CSV differs. NULL when there is none. */
char *kb_profile_sol_from_text(const char *text, size_t len,
			       size_t max_launches, size_t *launches);

/* The torch profiler's table from the report value of
 * benchmark.<i>.report (base64, "+*" alphabet as upstream's eval.py, or
 * the standard one). NULL when value is not such base64. */
char *kb_profile_report_decode(const char *value);

/* One file of a trace archive. */
struct kb_profile_file {
	const char *name;
	const void *data;
	size_t len;
};

/* A zip archive (deflate) of files[0..n) in memory: *out malloc'd.
 * Returns 0, or -ENOMEM / -EIO with msg set. */
int kb_profile_zip(const struct kb_profile_file *files, size_t n, uint8_t **out,
		   size_t *out_len, char *msg, size_t msg_size);

#endif
