/* Forks without end; every child forks too. Must be stopped by the process
 * limit and, at the latest, by the wall-clock kill. */
#include "hostile.h"

#include <signal.h>
#include <stdlib.h>

int main(void)
{
	hostile_start();
	long ok = 0, failed = 0;
	int first_err = 0;
	for (long i = 0; i < 1000000; i++) {
		pid_t p = fork();
		if (p == 0) {
			ok = failed = 0; /* children keep bombing */
			continue;
		}
		if (p > 0)
			ok++;
		else if (!first_err++)
			printf("fork failed after %ld forks: %s\n", ok,
			       strerror(errno));
		else
			failed++;
		fflush(stdout);
	}
	for (;;)
		pause();
}
