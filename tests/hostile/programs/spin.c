/* Burns CPU forever: killed at the wall-clock limit (or RLIMIT_CPU). */
#include "hostile.h"

int main(void)
{
	hostile_start();
	volatile unsigned long x = 0;
	for (;;)
		x++;
}
