/* builders: how each language of kb_lang.h is built and run, the table
 * behind kb_builder_find() (build.h). */
#include "build.h"
#include "build_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "jobdir.h"
#include "kb_lang.h"
#include "pbutil.h"

static int argv_binary(const Kb__Task *t, const char *python,
		       const char *harness_mode, const char *cases_file,
		       struct kb_argv *argv, char *msg, size_t msg_size)
{
	kb_argv_push(argv, KB_BUILD_OUT KB_JOBDIR_BINARY);
	kb_argv_push(argv, harness_mode);
	kb_argv_push(argv, cases_file);
	return 0;
}

static int argv_python(const Kb__Task *t, const char *python,
		       const char *harness_mode, const char *cases_file,
		       struct kb_argv *argv, char *msg, size_t msg_size)
{
	const char *main_file = kb_builder_config(t, "main");
	char *path;

	if (!main_file || !kb_jobdir_name_ok(main_file)) {
		snprintf(msg, msg_size,
			 "task config \"main\" must name a file of the task");
		return -EINVAL;
	}
	path = kb__xasprintf(KB_BUILD_TASK "%s", main_file);
	kb_argv_push(argv, python ? python : "python3");
	kb_argv_push(argv, path);
	kb_argv_push(argv, harness_mode);
	kb_argv_push(argv, cases_file);
	free(path);
	return 0;
}

/* One entry per enum kb_lang_id, in its order. */
static const struct kb_builder builders[] = {
	[KB_LANG_C] = {KB_LANG_C, kb__build_c, argv_binary},
	[KB_LANG_CU] = {KB_LANG_CU, kb__build_cu, argv_binary},
	[KB_LANG_HIP] = {KB_LANG_HIP, kb__build_hip, argv_binary},
	[KB_LANG_PY] = {KB_LANG_PY, kb__build_py, argv_python},
};
_Static_assert(sizeof(builders) / sizeof(builders[0]) == KB_LANG_COUNT,
	       "a builder for every language of kb_lang.h");

const struct kb_builder *kb_builder_find(const char *lang)
{
	const struct kb_lang *l = kb_lang_find(lang);

	return l ? &builders[l->id] : NULL;
}
