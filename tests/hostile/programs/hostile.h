/* Shared by the hostile programs: each prints one line per attempt,
 * "ACHIEVED: ..." when it got something it should not have, "blocked: ..."
 * otherwise, and exits 1 if anything was achieved — so a failing test's
 * output explains itself. The first line is always "uid=N" (the test uses it
 * to look for leftover processes of the run). */
#ifndef KB_HOSTILE_H
#define KB_HOSTILE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int hostile_achieved __attribute__((unused));

#define ACHIEVED(...)                                                          \
	do {                                                                   \
		printf("ACHIEVED: " __VA_ARGS__);                              \
		printf("\n");                                                  \
		fflush(stdout);                                                \
		hostile_achieved = 1;                                          \
	} while (0)
/* Something harmless that must keep working did not. */
#define BROKEN(...)                                                            \
	do {                                                                   \
		printf("BROKEN: " __VA_ARGS__);                                \
		printf("\n");                                                  \
		fflush(stdout);                                                \
		hostile_achieved = 1;                                          \
	} while (0)
#define BLOCKED(...)                                                           \
	do {                                                                   \
		printf("blocked: " __VA_ARGS__);                               \
		printf("\n");                                                  \
		fflush(stdout);                                                \
	} while (0)
/* For a call that returns < 0 / NULL on failure. */
#define EXPECT_FAIL(ok, what)                                                  \
	do {                                                                   \
		if (ok)                                                        \
			ACHIEVED("%s", what);                                  \
		else                                                           \
			BLOCKED("%s (%s)", what, strerror(errno));             \
	} while (0)

static inline void hostile_start(void)
{
	printf("uid=%u\n", (unsigned)getuid());
	fflush(stdout);
}

#endif
