/* Ignores SIGTERM, SIGINT and SIGHUP and sleeps past the timeout. */
#include "hostile.h"

#include <signal.h>

int main(void)
{
	hostile_start();
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	printf("sleeping, ignoring SIGTERM\n");
	fflush(stdout);
	for (;;)
		sleep(100);
}
