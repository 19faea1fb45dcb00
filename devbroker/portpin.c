/* See portpin.h. Built without _GNU_SOURCE so that glibc declares bind()
 * with a plain "const struct sockaddr *" (with _GNU_SOURCE it is a
 * transparent union), which this definition must match. */
#undef _GNU_SOURCE
#include "portpin.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_int pin_next;
static atomic_int pin_left;

void kb__portpin_arm(int first, int n)
{
	atomic_store(&pin_next, first);
	atomic_store(&pin_left, n);
}

int kb__portpin_disarm(void)
{
	return atomic_exchange(&pin_left, 0);
}

/* Claims one pinned port, or returns 0 when none is left. */
static int claim(void)
{
	int left = atomic_load(&pin_left);

	while (left > 0) {
		if (atomic_compare_exchange_weak(&pin_left, &left, left - 1))
			return atomic_fetch_add(&pin_next, 1);
	}
	return 0;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in sin;
	int port;

	if (addr && addr->sa_family == AF_INET && len >= sizeof(sin) &&
	    atomic_load(&pin_left) > 0) {
		memcpy(&sin, addr, sizeof(sin));
		if (sin.sin_port == 0 &&
		    sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
		    (port = claim()) > 0) {
			sin.sin_port = htons((uint16_t)port);
			return (int)syscall(SYS_bind, fd, &sin, sizeof(sin));
		}
	}
	return (int)syscall(SYS_bind, fd, addr, len);
}
