/* kb_lang: see kb_lang.h. */
#include "kb_lang.h"

#include <stdio.h>
#include <string.h>

static const char *const exts_c[] = {".c", NULL};
static const char *const exts_cu[] = {".cu", NULL};
static const char *const exts_hip[] = {".hip", ".cpp", NULL};
static const char *const exts_py[] = {".py", NULL};

/* Config keys per language; see kb_task.h. */
static const char *const compiled_keys[] = {"sources", "include_dirs",
					    "defines", "compile_flags",
					    "flags",   "libraries",
					    "loader",  NULL};
static const char *const python_keys[] = {"main", NULL};

static const struct kb_lang langs[KB_LANG_COUNT] = {
	[KB_LANG_C] = {.id = KB_LANG_C,
		       .name = "c",
		       .display = "C",
		       .exts = exts_c,
		       .comment = "//",
		       .families = KB_LANG_CPU,
		       .config_keys = compiled_keys,
		       .config_required = "sources"},
	[KB_LANG_CU] = {.id = KB_LANG_CU,
			.name = "cu",
			.display = "CUDA",
			.exts = exts_cu,
			.comment = "//",
			.families = KB_LANG_NVIDIA,
			.toolchain = KB_LANG_NVIDIA,
			.ncu = 1,
			.config_keys = compiled_keys,
			.config_required = "sources"},
	[KB_LANG_HIP] = {.id = KB_LANG_HIP,
			 .name = "hip",
			 .display = "HIP",
			 .exts = exts_hip,
			 .comment = "//",
			 .families = KB_LANG_AMD,
			 .toolchain = KB_LANG_AMD,
			 .config_keys = compiled_keys,
			 .config_required = "sources"},
	[KB_LANG_PY] = {.id = KB_LANG_PY,
			.name = "py",
			.display = "Python",
			.exts = exts_py,
			.comment = "#",
			.families = KB_LANG_CPU | KB_LANG_NVIDIA | KB_LANG_AMD,
			.python = 1,
			.config_keys = python_keys,
			.config_required = "main"},
};

const struct kb_lang *kb_lang_find(const char *name)
{
	for (int i = 0; name && i < KB_LANG_COUNT; i++)
		if (strcmp(langs[i].name, name) == 0)
			return &langs[i];
	return NULL;
}

const struct kb_lang *kb_lang_get(int id)
{
	return id >= 0 && id < KB_LANG_COUNT ? &langs[id] : NULL;
}

int kb_lang_has_ext(const struct kb_lang *l, const char *file)
{
	size_t n = strlen(file);

	for (const char *const *e = l->exts; *e; e++) {
		size_t k = strlen(*e);
		if (n > k && strcmp(file + n - k, *e) == 0)
			return 1;
	}
	return 0;
}

char *kb_lang_list(char *buf, size_t size)
{
	size_t off = 0;

	if (size)
		buf[0] = '\0';
	for (int i = 0; i < KB_LANG_COUNT && off < size; i++) {
		const char *sep = ", ";
		int w;

		if (i == 0)
			sep = "";
		else if (i == KB_LANG_COUNT - 1)
			sep = " or ";
		w = snprintf(buf + off, size - off, "%s%s", sep, langs[i].name);
		if (w < 0)
			break;
		off += (size_t)w;
	}
	return buf;
}
