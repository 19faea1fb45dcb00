/* Writes far more than the output limit to stdout, stderr and the report
 * channel (fd 3), as fast as it can. */
#include "hostile.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
	hostile_start();
	long mib = argc > 1 ? atol(argv[1]) : 256;
	static char buf[1 << 16];
	memset(buf, 'A', sizeof(buf));
	for (long i = 0; i < mib * 16; i++) {
		if (write(1, buf, sizeof(buf)) < 0 ||
		    write(2, buf, sizeof(buf)) < 0)
			return 3;
		if (write(3, buf, sizeof(buf)) < 0 && errno != EBADF)
			return 4;
	}
	return 0;
}
