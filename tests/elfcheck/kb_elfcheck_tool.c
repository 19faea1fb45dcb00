/* kb_elfcheck_tool: services/kb_elfcheck.h from the command line, for
 * tests/problems/cpu_problems.sh (which stages submissions the way the
 * worker does: cc -c, check, link).
 *
 *   kb_elfcheck_tool OBJECT [-e EXPORT]... [-r REQUIRED]... [-s SOURCE] [-n]
 *
 * -n: the object is a sealed nvcc object (kb_elfcheck_nvcc).
 * Prints "ok" and exits 0 when the object may be linked; prints the first
 * finding and exits 1 when it must be refused; exits 2 on usage errors or
 * an unreadable or malformed object (with the reason on stderr). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_elfcheck.h"

#define MAXN 16

int main(int argc, char **argv)
{
	const char *exports[MAXN + 1] = {0}, *required[MAXN + 1] = {0};
	size_t ne = 0, nr = 0;
	struct kb_elfcheck_policy pol = {NULL, NULL, NULL};
	int nvcc = 0;
	const char *path = NULL;

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "-e") == 0 && ne < MAXN)
			exports[ne++] = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "-r") == 0 &&
			 nr < MAXN)
			required[nr++] = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "-s") == 0)
			pol.source_name = argv[++i];
		else if (strcmp(argv[i], "-n") == 0)
			nvcc = 1;
		else if (!path && argv[i][0] != '-')
			path = argv[i];
		else {
			fprintf(stderr, "usage: %s OBJECT [-e EXPORT]... "
					"[-r REQUIRED]... [-s SOURCE] [-n]\n",
				argv[0]);
			return 2;
		}
	}
	if (!path) {
		fprintf(stderr, "usage: %s OBJECT [-e EXPORT]...\n", argv[0]);
		return 2;
	}
	if (ne)
		pol.exports = exports;
	if (nr)
		pol.required = required;

	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 2;
	}
	size_t cap = 1 << 16, len = 0;
	unsigned char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			return 2;
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (len < cap)
			break;
		cap *= 2;
		buf = realloc(buf, cap);
	}
	fclose(f);

	struct kb_elfcheck_result res;
	char err[256];
	if ((nvcc ? kb_elfcheck_nvcc : kb_elfcheck)(buf, len, &pol, &res, err,
						    sizeof err)) {
		fprintf(stderr, "%s: %s\n", path, err);
		free(buf);
		return 2;
	}
	free(buf);
	if (res.found) {
		printf("%s\n", res.msg);
		return 1;
	}
	printf("ok\n");
	return 0;
}
