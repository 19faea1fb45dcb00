/* builders: the language table behind kb_builder_find() (build.h). */
#include "build.h"
#include "build_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobdir.h"
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

static const struct kb_builder builders[] = {
	{"c", kb__build_c, argv_binary},
	{"py", kb__build_py, argv_python},
	{"cu", kb__build_cu, argv_binary},
	{"hip", kb__build_hip, argv_binary},
};

const struct kb_builder *kb_builder_find(const char *lang)
{
	for (size_t i = 0; i < sizeof(builders) / sizeof(builders[0]); i++)
		if (lang && strcmp(builders[i].lang, lang) == 0)
			return &builders[i];
	return NULL;
}
