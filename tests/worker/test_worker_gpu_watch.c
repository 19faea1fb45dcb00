/* The NVIDIA device fault watch (worker/device/nvidia.h): which Xids are the device's
 * fault, the watch against a fake libnvidia-ml scripted through FAKE_NVML_*
 * (fake_nvml.c), and whole evaluations on a GPU worker whose run ends
 * with the harness's "device API error" after user code started.
 *
 * Each test runs in its own process (Check's fork mode), so NVML is
 * opened afresh, from whatever KB_NVML_LIB the test set first. A real
 * Xid cannot be produced here: the fake stands in for the driver.
 */
#include <check.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "eval.h"
#include "nvidia.h"
#include "jobdir.h"
#include "kb_log.h"
#include "kb_util.h"
#include "pbutil.h"
#include "worker_fixture.h"

#define PCI "0000:18:00.0"

static const struct kb_device_info device = {
	.ok = 1,
	.name = "NVIDIA H100 80GB HBM3",
	.cc_major = 9,
	.pci_bus_id = PCI,
	.uuid = "GPU-0b1c",
	.minor = 3,
};

/* ---- the Xid table ---------------------------------------------------- */

START_TEST(test_xid_classification)
{
	static const unsigned faults[] = {48, 61, 62,  63,  64,  74, 79,
					  94, 95, 119, 120, 140, 154};
	/* The program's own (13, 31, 43, 45, 68), corrected errors (92),
	 * NVML's "unknown Xid" (999) and Xids not in the table. */
	static const unsigned not_faults[] = {
		0,  1,  8,   13,  31,  43,   45,    46,
		68, 92, 109, 137, 999, 1000, 12345, UINT_MAX,
	};

	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		ck_assert_msg(kb_nvidia_xid_is_device_fault(faults[i]),
			      "Xid %u should be a device fault", faults[i]);
		ck_assert_ptr_nonnull(kb_nvidia_xid_name(faults[i]));
	}
	for (size_t i = 0; i < sizeof(not_faults) / sizeof(not_faults[0]); i++)
		ck_assert_msg(!kb_nvidia_xid_is_device_fault(not_faults[i]),
			      "Xid %u should not be a device fault",
			      not_faults[i]);
	ck_assert_str_eq(kb_nvidia_xid_name(79), "GPU has fallen off the bus");
	ck_assert_str_eq(kb_nvidia_xid_name(48), "double-bit ECC error");
	ck_assert_str_eq(kb_nvidia_xid_name(13), "graphics engine exception");
	ck_assert_ptr_null(kb_nvidia_xid_name(12345));
}
END_TEST

/* ---- the watch, against the fake ------------------------------------- */

/* Points NVML at the fake and clears its script. */
static void use_fake(void)
{
	static const char *const vars[] = {
		"FAKE_NVML_PCI",    "FAKE_NVML_XID", "FAKE_NVML_DBE",
		"FAKE_NVML_EVENTS", "FAKE_NVML_ECC", "FAKE_NVML_LOST",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	ck_assert_int_eq(setenv("KB_NVML_LIB", FAKE_NVML_LIB, 1), 0);
}

/* The fake's own counters, from the copy the worker loaded. */
static void *fake_sym(const char *name)
{
	void *lib = dlopen(FAKE_NVML_LIB, RTLD_NOW | RTLD_NOLOAD);
	void *sym;

	ck_assert_msg(lib != NULL, "the fake NVML is not loaded");
	sym = dlsym(lib, name);
	ck_assert_ptr_nonnull(sym);
	dlclose(lib);
	return sym;
}

static int open_sets(void)
{
	return ((int (*)(void))fake_sym("fake_nvml_open_sets"))();
}

static unsigned long long registered(void)
{
	typedef unsigned long long (*mask_fn)(void);

	return ((mask_fn)fake_sym("fake_nvml_registered"))();
}

/* What happens on the device during a watch (the fake's script, set
 * before the watch starts), and what the watch must make of it. */
static const struct watch_case {
	const char *script[4]; /* "FAKE_NVML_...=value" */
	enum kb_device_watch_result result;
	const char *why;
	unsigned long long registered; /* event types the watch asked for */
} watch_cases[] = {
	{{"FAKE_NVML_XID=79"},
	 KB_DEVICE_WATCH_FAULT,
	 "Xid 79 (GPU has fallen off the bus)",
	 0x8 | 0x2},
	{{"FAKE_NVML_XID=13"},
	 KB_DEVICE_WATCH_CLEAN,
	 "Xid 13 (graphics engine exception)",
	 0x8 | 0x2},
	/* No event at all, with and without ECC. */
	{{NULL}, KB_DEVICE_WATCH_CLEAN, "", 0x8 | 0x2},
	{{"FAKE_NVML_ECC=3"}, KB_DEVICE_WATCH_CLEAN, "", 0x8 | 0x2},
	/* NVML's "unknown Xid". */
	{{"FAKE_NVML_XID=999"},
	 KB_DEVICE_WATCH_CLEAN,
	 "Xid 999 (not a device fault)",
	 0x8 | 0x2},
	{{"FAKE_NVML_XID=13,95"},
	 KB_DEVICE_WATCH_FAULT,
	 "Xid 95 (uncontained ECC error)",
	 0x8 | 0x2},
	{{"FAKE_NVML_ECC=0,2"},
	 KB_DEVICE_WATCH_FAULT,
	 "uncorrected ECC errors 0 -> 2",
	 0x8 | 0x2},
	/* A device with neither event type: the ECC count alone. */
	{{"FAKE_NVML_EVENTS=0", "FAKE_NVML_XID=79", "FAKE_NVML_ECC=7,8"},
	 KB_DEVICE_WATCH_FAULT,
	 "uncorrected ECC errors 7 -> 8",
	 0},
	/* The DBE's Xid reads as the consequential 43 (NVML reports the
	 * latest Xid); the ECC event itself is the evidence. */
	{{"FAKE_NVML_DBE=1", "FAKE_NVML_XID=48,43"},
	 KB_DEVICE_WATCH_FAULT,
	 "double-bit ECC error",
	 0x8 | 0x2},
	{{"FAKE_NVML_LOST=1"},
	 KB_DEVICE_WATCH_FAULT,
	 "the GPU is lost (NVML)",
	 0x8 | 0x2},
	{{"FAKE_NVML_EVENTS=0", "FAKE_NVML_ECC=0", "FAKE_NVML_LOST=1"},
	 KB_DEVICE_WATCH_FAULT,
	 "the GPU is lost (NVML)",
	 0},
};

/* Points NVML at the fake and sets its script: "VAR=value" each. */
static void play_script(const char *const *script, size_t n)
{
	use_fake();
	for (size_t i = 0; i < n && script[i]; i++) {
		const char *eq = strchr(script[i], '=');
		char name[64];

		ck_assert_ptr_nonnull(eq);
		snprintf(name, sizeof(name), "%.*s", (int)(eq - script[i]),
			 script[i]);
		ck_assert_int_eq(setenv(name, eq + 1, 1), 0);
	}
}

START_TEST(test_watch)
{
	const struct watch_case *c = &watch_cases[_i];
	char err[256] = "", why[160] = "junk";
	struct kb_device_watch *w;

	play_script(c->script, sizeof(c->script) / sizeof(c->script[0]));
	w = kb_device_nvidia.watch_start(&device, err, sizeof(err));
	ck_assert_msg(w != NULL, "no watch: %s", err);
	ck_assert_int_eq(kb_device_watch_end(w, why, sizeof(why)), c->result);
	ck_assert_str_eq(why, c->why);
	ck_assert_uint_eq(registered(), c->registered);
	ck_assert_int_eq(open_sets(), 0);
}
END_TEST

START_TEST(test_nvml_missing_is_unknown)
{
	char err[256] = "", why[160];

	ck_assert_int_eq(
		setenv("KB_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1), 0);
	ck_assert_ptr_null(
		kb_device_nvidia.watch_start(&device, err, sizeof(err)));
	ck_assert_msg(strstr(err, "cannot load /nonexistent/libnvidia-ml.so.1"),
		      "%s", err);
	ck_assert_int_eq(kb_device_watch_end(NULL, why, sizeof(why)),
			 KB_DEVICE_WATCH_UNKNOWN);
}
END_TEST

START_TEST(test_cannot_watch)
{
	struct kb_device_info other = device, none = {0};
	char err[256] = "";

	use_fake();
	ck_assert_ptr_null(
		kb_device_nvidia.watch_start(&none, err, sizeof(err)));
	ck_assert_str_eq(err, "no NVIDIA device was read at start-up");
	snprintf(other.pci_bus_id, sizeof(other.pci_bus_id), "0000:99:00.0");
	ck_assert_ptr_null(
		kb_device_nvidia.watch_start(&other, err, sizeof(err)));
	ck_assert_str_eq(err, "NVML does not know device 0000:99:00.0");
	/* No event type supported and ECC off: nothing to watch with. */
	setenv("FAKE_NVML_EVENTS", "0", 1);
	ck_assert_ptr_null(
		kb_device_nvidia.watch_start(&device, err, sizeof(err)));
	ck_assert_msg(strstr(err, "neither Xid events nor ECC counts"), "%s",
		      err);
	ck_assert_int_eq(open_sets(), 0);
}
END_TEST

START_TEST(test_sample_reads_the_fake)
{
	struct kb_device_sample s;
	char drv[64];

	/* KB_NVML_LIB serves the system info readings too. */
	use_fake();
	ck_assert_int_eq(kb_device_nvidia.sample(&device, &s), 0);
	ck_assert_int_eq(s.sm_mhz, 1980);
	ck_assert_int_eq(s.temp_c, 41);
	ck_assert_int_eq(s.power_mw, 300000);
	ck_assert_int_eq(kb_nvidia_driver_string(drv, sizeof(drv)), 0);
	ck_assert_str_eq(drv, "550.54.15");
}
END_TEST

/* ---- whole evaluations ------------------------------------------------ */

static char *root;
static int run_exit; /* the harness run's exit status */

static void setup(void)
{
	root = wf_tmpdir();
	ck_assert_ptr_nonnull(root);
}

static void teardown(void)
{
	kb_jobdir_remove(root);
	free(root);
}

/* The harness: user code started, then the run ends with run_exit (110
 * is the harness's "device API error", which the submission could fake). */
static int fake_sandbox(const struct kb_sandbox_opts *o,
			struct kb_sandbox_result *r, char *err, size_t err_size)
{
	ck_assert_int_eq(o->want_report, 1);
	ck_assert_int_eq(o->gpu, 1);
	memset(r, 0, sizeof(*r));
	r->exited = 1;
	r->exit_code = run_exit;
	r->wall_s = 1;
	r->out = kb__xstrdup("");
	r->err = kb__xstrdup("");
	r->report = kb__xstrdup(run_exit == 0 ? "test-count: 1\n"
						"user-code: started\n"
						"test.0.status: pass\n"
						"check: pass\n"
					      : "test-count: 1\n"
						"user-code: started\n");
	r->report_len = strlen(r->report);
	return 0;
}

static Kb__Result *evaluate(int exit_code)
{
	Kb__Submission *s = wf_submission("py", KB__MODE__MODE_TEST);
	struct kb_eval_opts o = {
		.workdir = root,
		.worker = "gpu-worker",
		.gpu = "H100",
		.build_timeout_s = 60,
		.sandbox = fake_sandbox,
		.gpu_visible = "GPU-0b1c",
		.device = &device,
	};
	Kb__Result *r;

	free(s->gpu);
	s->gpu = kb__xstrdup("H100");
	run_exit = exit_code;
	r = kb_eval_run(&o, s);
	kb__submission__free_unpacked(s, NULL);
	return r;
}

/* A GPU run whose harness reports user code started and then exits
 * with exit_code, while the device does what script says (NULL: no NVML
 * at all). */
static const struct eval_case {
	const char *script;
	int exit_code;
	Kb__Verdict verdict;
	Kb__Fault fault;
	const char *error;
} eval_cases[] = {
	{"FAKE_NVML_XID=79", 110, KB__VERDICT__VERDICT_INFRA_ERROR,
	 KB__FAULT__FAULT_INFRA,
	 "infrastructure error in the tests: GPU device fault: Xid 79 (GPU "
	 "has fallen off the bus)"},
	/* The device's fault outranks even a pass. */
	{"FAKE_NVML_ECC=1,2", 0, KB__VERDICT__VERDICT_INFRA_ERROR,
	 KB__FAULT__FAULT_INFRA,
	 "infrastructure error in the tests: GPU device fault: uncorrected "
	 "ECC errors 1 -> 2"},
	/* As before the watch: exit 110 after user code started is the
	 * user's, with a program's own Xid or without NVML. */
	{"FAKE_NVML_XID=13", 110, KB__VERDICT__VERDICT_CRASHED,
	 KB__FAULT__FAULT_USER,
	 "tests crashed: exit status 110 after your code started"},
	{NULL, 110, KB__VERDICT__VERDICT_CRASHED, KB__FAULT__FAULT_USER,
	 "tests crashed: exit status 110 after your code started"},
	{"FAKE_NVML_ECC=4,4", 0, KB__VERDICT__VERDICT_PASSED,
	 KB__FAULT__FAULT_NONE, ""},
};

START_TEST(test_eval)
{
	const struct eval_case *c = &eval_cases[_i];
	Kb__Result *r;

	if (c->script)
		play_script(&c->script, 1);
	else
		setenv("KB_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
	r = evaluate(c->exit_code);
	ck_assert_msg(r->verdict == c->verdict, "verdict %d, not %d: %s",
		      r->verdict, c->verdict, r->error);
	ck_assert_int_eq(r->fault, c->fault);
	ck_assert_str_eq(r->error ? r->error : "", c->error);
	ck_assert_int_eq(r->n_runs, 1);
	ck_assert_int_eq(r->runs[0]->passed,
			 c->verdict == KB__VERDICT__VERDICT_PASSED);
	kb__result__free_unpacked(r, NULL);
	if (c->script)
		ck_assert_int_eq(open_sets(), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker_gpu_watch");
	TCase *xid = tcase_create("xid");
	TCase *w = tcase_create("watch");
	TCase *ev = tcase_create("eval");

	tcase_add_test(xid, test_xid_classification);
	suite_add_tcase(s, xid);

	tcase_add_loop_test(w, test_watch, 0,
			    sizeof(watch_cases) / sizeof(watch_cases[0]));
	tcase_add_test(w, test_nvml_missing_is_unknown);
	tcase_add_test(w, test_cannot_watch);
	tcase_add_test(w, test_sample_reads_the_fake);
	suite_add_tcase(s, w);

	tcase_add_checked_fixture(ev, setup, teardown);
	tcase_add_loop_test(ev, test_eval, 0,
			    sizeof(eval_cases) / sizeof(eval_cases[0]));
	suite_add_tcase(s, ev);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	kb_log_init("worker-gpu-watch-test", KB_LOG_ERROR, 0);
	if (kb_util_init() < 0)
		return EXIT_FAILURE;
	/* The watch opens NVML once per process: every test needs its own. */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
