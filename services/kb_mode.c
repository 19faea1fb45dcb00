/* kb_mode: see kb_mode.h. */
#include "kb_mode.h"

#include <stddef.h>
#include <string.h>

static const char *const names[] = {
	[KB_MODE_TEST] = "test",
	[KB_MODE_BENCHMARK] = "benchmark",
	[KB_MODE_PROFILE] = "profile",
	[KB_MODE_LEADERBOARD] = "leaderboard",
};

enum kb_mode kb_mode_parse(const char *s)
{
	if (!s)
		return KB_MODE_INVALID;
	for (int m = KB_MODE_TEST; m <= KB_MODE_LEADERBOARD; m++)
		if (strcmp(s, names[m]) == 0)
			return (enum kb_mode)m;
	return KB_MODE_INVALID;
}

const char *kb_mode_name_or(int m, const char *fallback)
{
	if (m < KB_MODE_TEST || m > KB_MODE_LEADERBOARD)
		return fallback;
	return names[m];
}

const char *kb_mode_name(int m)
{
	return kb_mode_name_or(m, "");
}

const char *kb_mode_label(int m)
{
	return kb_mode_name_or(m, m == KB_MODE_INVALID ? "unspecified"
						       : "unknown");
}
