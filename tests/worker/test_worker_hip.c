/* The AMD worker without an AMD GPU: the device read from a fake amdgpu
 * sysfs tree (KFD topology, hwmon, RAS counters) through the AMD family's
 * probe, sample, description and fault watch (worker/device/amd.h); the gfx target helpers; and, with Debian's
 * hipcc, `kb-worker eval` on pmpp_hip/vectoradd through the real sandbox
 * (the build for gfx90a succeeds, the run ends as the platform's fault:
 * no device) and on a submission that does not compile (the user's).
 * Without hipcc the eval test fails unless Debian has no hipcc package
 * for this machine (then the suite exits 77: skipped). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amd.h"
#include "device.h"
#include "jobdir.h"
#include "kb_util.h"
#include "pbutil.h"
#include "worker_fixture.h"
#include "kb_check_main.h"

#define WORKER KB_BINARY_DIR "/worker/kb-worker"
#define VECTORADD KB_SOURCE_DIR "/problems/pmpp_hip/vectoradd"
#define DEV "/bus/pci/devices/0000:c1:00.0"

static char *root;

static void put(const char *rel, const char *text)
{
	char *path = kb__xasprintf("%s/%s", root, rel);
	char *cmd = kb__xasprintf("mkdir -p \"$(dirname '%s')\"", path);

	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(kb_write_file(path, text, strlen(text), 0644), 0);
	free(cmd);
	free(path);
}

/* A host with a CPU node and two GPUs: MI300X (node 1, c1:00.0,
 * renderD128) and MI250X (node 2, renderD136). */
static void setup(void)
{
	root = wf_tmpdir();
	ck_assert_ptr_nonnull(root);
	put("class/kfd/kfd/topology/nodes/0/properties",
	    "cpu_cores_count 96\nsimd_count 0\ngfx_target_version 0\n");
	put("class/kfd/kfd/topology/nodes/1/properties",
	    "simd_count 1216\ngfx_target_version 90402\nlocation_id 49408\n"
	    "domain 0\ndrm_render_minor 128\n");
	put("class/kfd/kfd/topology/nodes/2/properties",
	    "simd_count 440\ngfx_target_version 90010\nlocation_id 8448\n"
	    "domain 0\ndrm_render_minor 136\n");
	put(DEV "/product_name", "AMD Instinct MI300X\n");
	put(DEV "/pp_dpm_sclk", "0: 500Mhz\n1: 2100Mhz *\n");
	put(DEV "/hwmon/hwmon2/temp1_input", "44000\n");
	put(DEV "/hwmon/hwmon2/temp1_label", "edge\n");
	put(DEV "/hwmon/hwmon2/temp2_input", "61000\n");
	put(DEV "/hwmon/hwmon2/temp2_label", "junction\n");
	put(DEV "/hwmon/hwmon2/power1_average", "412000000\n");
	put(DEV "/ras/umc_err_count", "ue: 0\nce: 3\n");
	put(DEV "/ras/gfx_err_count", "ue: 1\nce: 0\n");
	put("module/amdgpu/version", "6.8.5\n");
	kb_amd_set_sysfs_root(root);
}

static void teardown(void)
{
	kb_amd_set_sysfs_root(NULL);
	kb_jobdir_remove(root);
	free(root);
}

START_TEST(test_gfx_names)
{
	char s[32];

	ck_assert_int_eq(kb_amd_gfx_name(90402, s, sizeof(s)), 0);
	ck_assert_str_eq(s, "gfx942");
	ck_assert_int_eq(kb_amd_gfx_name(90010, s, sizeof(s)), 0);
	ck_assert_str_eq(s, "gfx90a");
	ck_assert_int_eq(kb_amd_gfx_name(90500, s, sizeof(s)), 0);
	ck_assert_str_eq(s, "gfx950");
	ck_assert_int_eq(kb_amd_gfx_name(110000, s, sizeof(s)), 0);
	ck_assert_str_eq(s, "gfx1100");
	ck_assert_int_lt(kb_amd_gfx_name(0, s, sizeof(s)), 0);
	ck_assert_int_eq(kb_amd_arch_valid("gfx942"), 1);
	ck_assert_int_eq(kb_amd_arch_valid("gfx90a:sramecc+:xnack-"), 1);
	ck_assert_int_eq(kb_amd_arch_valid("gfx1100"), 1);
	ck_assert_int_eq(kb_amd_arch_valid("90a"), 0);
	ck_assert_int_eq(kb_amd_arch_valid("gfx9"), 0);
	ck_assert_int_eq(kb_amd_arch_valid("gfx942;rm -rf"), 0);
	ck_assert_int_eq(kb_amd_arch_valid("gfx942:xnack"), 0);
	ck_assert_str_eq(kb_amd_arch_for_name("MI300"), "gfx942");
	ck_assert_str_eq(kb_amd_arch_for_name("mi300x"), "gfx942");
	ck_assert_str_eq(kb_amd_arch_for_name("MI250X"), "gfx90a");
	ck_assert_str_eq(kb_amd_arch_for_name("MI355X"), "gfx950");
	ck_assert_ptr_null(kb_amd_arch_for_name("H100"));
	ck_assert_int_eq(kb_amd_is_amd_name("MI300"), 1);
	ck_assert_int_eq(kb_amd_is_amd_name("H100"), 0);
}
END_TEST

START_TEST(test_probe)
{
	struct kb_device_info g;

	ck_assert_int_eq(kb_amd_probe(&g, NULL), 0);
	ck_assert_int_eq(g.ok, 1);
	ck_assert_ptr_eq(g.family, &kb_device_amd);
	ck_assert_str_eq(g.gfx, "gfx942");
	ck_assert_str_eq(g.name, "AMD Instinct MI300X");
	ck_assert_str_eq(g.pci_bus_id, "0000:c1:00.0");
	ck_assert_int_eq(g.render_minor, 128);
	ck_assert_int_eq(g.minor, -1);

	/* ROCR_VISIBLE_DEVICES=1: the second GPU node (the CPU node does
	 * not count), no product name */
	ck_assert_int_eq(kb_amd_probe(&g, "1,0"), 0);
	ck_assert_str_eq(g.gfx, "gfx90a");
	ck_assert_str_eq(g.name, "AMD gfx90a");
	ck_assert_str_eq(g.pci_bus_id, "0000:21:00.0");
	ck_assert_int_eq(g.render_minor, 136);

	ck_assert_int_eq(kb_amd_probe(&g, "2"), -1);
	ck_assert_ptr_nonnull(strstr(g.why, "no AMD GPU 2"));
	ck_assert_int_eq(kb_amd_probe(&g, "GPU-abc"), -1);
	kb_amd_set_sysfs_root("/nonexistent");
	ck_assert_int_eq(kb_amd_probe(&g, NULL), -1);
	ck_assert_ptr_nonnull(strstr(g.why, "no KFD topology"));
}
END_TEST

START_TEST(test_sample_and_driver)
{
	struct kb_device_info g;
	struct kb_device_sample s;
	struct kb_device_desc desc;

	ck_assert_int_eq(kb_amd_probe(&g, NULL), 0);
	ck_assert_int_eq(kb_device_amd.sample(&g, &s), 0);
	ck_assert_int_eq(s.sm_mhz, 2100);
	ck_assert_int_eq(s.temp_c, 61);
	ck_assert_int_eq(s.power_mw, 412000);
	ck_assert_int_eq(kb_device_amd.describe(&g, "MI300", &desc), 0);
	ck_assert_str_eq(desc.driver, "6.8.5");
}
END_TEST

START_TEST(test_watch)
{
	struct kb_device_info g;
	struct kb_device_watch *w;
	char err[256], why[256];

	ck_assert_int_eq(kb_amd_probe(&g, NULL), 0);
	/* clean run; corrected errors do not count */
	ck_assert_ptr_nonnull(
		w = kb_device_amd.watch_start(&g, err, sizeof(err)));
	put(DEV "/ras/umc_err_count", "ue: 0\nce: 9\n");
	ck_assert_int_eq(kb_device_watch_end(w, why, sizeof(why)),
			 KB_DEVICE_WATCH_CLEAN);
	/* an uncorrectable error during the run: the device's fault */
	ck_assert_ptr_nonnull(
		w = kb_device_amd.watch_start(&g, err, sizeof(err)));
	put(DEV "/ras/umc_err_count", "ue: 2\nce: 9\n");
	ck_assert_int_eq(kb_device_watch_end(w, why, sizeof(why)),
			 KB_DEVICE_WATCH_FAULT);
	ck_assert_str_eq(why, "uncorrectable RAS errors 1 -> 3");
	/* the device fell off the bus */
	ck_assert_ptr_nonnull(
		w = kb_device_amd.watch_start(&g, err, sizeof(err)));
	{
		char *cmd = kb__xasprintf("rm -rf '%s" DEV "'", root);
		ck_assert_int_eq(system(cmd), 0);
		free(cmd);
	}
	ck_assert_int_eq(kb_device_watch_end(w, why, sizeof(why)),
			 KB_DEVICE_WATCH_FAULT);
	ck_assert_ptr_nonnull(strstr(why, "gone"));
	/* a device without RAS counters has no watch */
	ck_assert_int_eq(kb_amd_probe(&g, "1"), 0);
	ck_assert_ptr_null(kb_device_amd.watch_start(&g, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "no RAS error counters"));
}
END_TEST

/* ---- kb-worker eval with the real hipcc -------------------------------- */

static int have_hipcc(void)
{
	return access("/usr/bin/hipcc", X_OK) == 0;
}

static char *eval(const char *file, char **err)
{
	char *work = kb__xasprintf("KB_WORKDIR=%s/work", root);
	char *argv[] = {WORKER, "eval",  VECTORADD, (char *)file, "--mode",
			"test", "--gpu", "MI300",   NULL};
	char *env[] = {work,
		       "KB_GPU_REQUIRE=0",
		       "KB_HIP_ARCH=gfx90a",
		       "KB_SELFTEST=0",
		       "KB_LOG_LEVEL=warn",
		       NULL};
	char *out = NULL;
	int st = wf_run(argv, env, &out, err, NULL);

	ck_assert_msg(WIFEXITED(st), "kb-worker did not exit");
	free(work);
	return out;
}

START_TEST(test_eval_hipcc)
{
	char *out, *err, *bad;

	ck_assert_msg(have_hipcc(), "no /usr/bin/hipcc (scripts/deps.sh)");
	out = eval(VECTORADD "/submission_ok.hip", &err);
	ck_assert_msg(strstr(out, "Compilation successful"), "%s\n%s", out,
		      err);
	/* no AMD GPU here: the run is the platform's fault, never the user's */
	ck_assert_msg(strstr(out, "infra_error"), "%s\n%s", out, err);
	free(out);
	free(err);

	bad = kb__xasprintf("%s/bad.hip", root);
	ck_assert_int_eq(kb_write_file(bad, "extern \"C\" void custom_kernel(",
				       31, 0644),
			 0);
	out = eval(bad, &err);
	ck_assert_msg(strstr(out, "compile_error") ||
			      strstr(out, "Compilation failed"),
		      "%s\n%s", out, err);
	free(out);
	free(err);
	free(bad);
}
END_TEST

static Suite *hip_suite(void)
{
	Suite *s = suite_create("worker_hip");
	TCase *tc = tcase_create("amdgpu");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_gfx_names);
	tcase_add_test(tc, test_probe);
	tcase_add_test(tc, test_sample_and_driver);
	tcase_add_test(tc, test_watch);
	tcase_add_test(tc, test_eval_hipcc);
	tcase_set_timeout(tc, 600);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* Skipped only where hipcc cannot be had: no package for this
	 * machine (scripts/deps.sh installs it everywhere else). */
	if (!have_hipcc() &&
	    system("apt-cache policy hipcc 2>/dev/null | grep -q 'Candidate: [0-9]'") !=
		    0) {
		printf("skip: no hipcc package for this machine\n");
		return 77;
	}
	return kb_check_run(hip_suite());
}
