/* Double fork + setsid: a daemon that tries to outlive the run, ignoring
 * every signal it can, and leaving a heartbeat in the workdir. */
#include "hostile.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

int main(void)
{
	hostile_start();
	pid_t p = fork();
	if (p < 0)
		return 2;
	if (p > 0) {
		/* Give the daemon time to start, then leave. */
		usleep(200000);
		printf("parent exits; daemon started\n");
		return 0;
	}
	setsid();
	if (fork() != 0)
		_exit(0);
	for (int s = 1; s < 32; s++)
		signal(s, SIG_IGN);
	close(0);
	close(1);
	close(2);
	for (unsigned long i = 0;; i++) {
		int fd = open("heartbeat", O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			if (write(fd, ".", 1) < 0)
				_exit(3);
			close(fd);
		}
		usleep(20000);
	}
}
