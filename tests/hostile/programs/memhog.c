/* Allocates and touches memory until something stops it; prints how far it
 * got every 32 MiB. Also fills /tmp and /dev/shm (tmpfs counts as memory). */
#include "hostile.h"

#include <fcntl.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	hostile_start();
	size_t chunk = 32u << 20, total = 0;
	if (argc > 1 && strcmp(argv[1], "tmpfs") == 0) {
		static char buf[1 << 20];
		memset(buf, 'x', sizeof(buf));
		int fd = open("/dev/shm/fill", O_WRONLY | O_CREAT, 0600);
		if (fd < 0)
			return 2;
		for (;;) {
			if (write(fd, buf, sizeof(buf)) !=
			    (ssize_t)sizeof(buf)) {
				printf("tmpfs write stopped at %zu MiB: %s\n",
				       total >> 20, strerror(errno));
				return 0;
			}
			total += sizeof(buf);
			if (total % chunk == 0) {
				printf("tmpfs %zu MiB\n", total >> 20);
				fflush(stdout);
			}
		}
	}
	for (;;) {
		char *p = malloc(chunk);
		if (!p) {
			printf("malloc failed at %zu MiB\n", total >> 20);
			return 0;
		}
		memset(p, 1, chunk);
		total += chunk;
		printf("%zu MiB\n", total >> 20);
		fflush(stdout);
	}
}
