#include "kb_config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kb_log.h"

static const char *env_get(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};

	for (size_t i = 0; i < KB_ARRAY_LEN(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = 1, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *out = 0, 0;
	}
	return -EINVAL;
}

static int parse_long(const char *s, long *out)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

int kb_config_load_from(const struct kb_cfg_entry *table, size_t n,
			kb_cfg_getenv_fn get, void *ctx, char *errstr,
			size_t errstr_size)
{
	for (size_t i = 0; i < n; i++) {
		const struct kb_cfg_entry *e = &table[i];
		const char *v = get(e->env, ctx);
		const char *origin = "environment";

		if (!v) {
			v = e->def;
			origin = "default";
		}
		if (!v) {
			if (e->type == KB_CFG_STRING) {
				*(char **)e->dst = NULL; /* optional, unset */
				continue;
			}
			snprintf(errstr, errstr_size, "%s is required (%s)",
				 e->env, e->help ? e->help : "no default");
			return -EINVAL;
		}
		switch (e->type) {
		case KB_CFG_STRING: {
			char *copy = strdup(v);
			if (!copy) {
				snprintf(errstr, errstr_size, "out of memory");
				return -ENOMEM;
			}
			free(*(char **)e->dst);
			*(char **)e->dst = copy;
			break;
		}
		case KB_CFG_INT: {
			long x;
			if (parse_long(v, &x) != 0) {
				snprintf(errstr, errstr_size,
					 "%s=\"%s\" (%s) is not an integer",
					 e->env, v, origin);
				return -EINVAL;
			}
			if (x < e->min || x > e->max) {
				snprintf(
					errstr, errstr_size,
					"%s=%ld (%s) is out of range [%ld, %ld]",
					e->env, x, origin, e->min, e->max);
				return -EINVAL;
			}
			*(long *)e->dst = x;
			break;
		}
		case KB_CFG_BOOL:
			if (parse_bool(v, (int *)e->dst) != 0) {
				snprintf(
					errstr, errstr_size,
					"%s=\"%s\" (%s) is not a boolean (1/0, true/false, yes/no, on/off)",
					e->env, v, origin);
				return -EINVAL;
			}
			break;
		default:
			snprintf(errstr, errstr_size, "%s: bad table entry",
				 e->env);
			return -EINVAL;
		}
	}
	return 0;
}

int kb_config_load(const struct kb_cfg_entry *table, size_t n, char *errstr,
		   size_t errstr_size)
{
	return kb_config_load_from(table, n, env_get, NULL, errstr,
				   errstr_size);
}

void kb_config_log(const struct kb_cfg_entry *table, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct kb_cfg_entry *e = &table[i];
		switch (e->type) {
		case KB_CFG_STRING: {
			const char *v = *(char **)e->dst;
			kb_info("config %s=%s", e->env,
				!v          ? "(unset)"
				: e->secret ? "***"
					    : v);
			break;
		}
		case KB_CFG_INT:
			kb_info("config %s=%ld", e->env, *(long *)e->dst);
			break;
		case KB_CFG_BOOL:
			kb_info("config %s=%s", e->env,
				*(int *)e->dst ? "true" : "false");
			break;
		}
	}
}

void kb_config_free(const struct kb_cfg_entry *table, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (table[i].type == KB_CFG_STRING) {
			free(*(char **)table[i].dst);
			*(char **)table[i].dst = NULL;
		}
	}
}
