/* Tries to reach the network: the host's loopback service (port in argv[1]),
 * outside addresses, and socket families that bypass network namespaces. */
#include "hostile.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static void try_connect(const char *ip, int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((unsigned short)port)};
	struct timeval tv = {1, 0};

	if (s < 0) {
		BLOCKED("socket(AF_INET) (%s)", strerror(errno));
		return;
	}
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	inet_pton(AF_INET, ip, &a.sin_addr);
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
		const char msg[] = "hello from the sandbox\n";
		ssize_t n = write(s, msg, sizeof(msg) - 1);
		ACHIEVED("connected to %s:%d (wrote %zd bytes)", ip, port, n);
	} else {
		BLOCKED("connect %s:%d (%s)", ip, port, strerror(errno));
	}
	close(s);
}

int main(int argc, char **argv)
{
	hostile_start();
	int port = argc > 1 ? atoi(argv[1]) : 80;
	try_connect("127.0.0.1", port);
	try_connect("1.1.1.1", 53);
	try_connect("8.8.8.8", 443);
	try_connect("10.0.0.1", 80);
	/* Interfaces the run can see (only lo is expected). */
	struct if_nameindex *ifs = if_nameindex();
	for (struct if_nameindex *i = ifs; i && i->if_index; i++)
		if (strcmp(i->if_name, "lo") != 0)
			ACHIEVED("sees network interface %s", i->if_name);
	if (ifs)
		if_freenameindex(ifs);
	int s;
	EXPECT_FAIL((s = socket(AF_VSOCK, SOCK_STREAM, 0)) >= 0,
		    "socket(AF_VSOCK)");
	EXPECT_FAIL((s = socket(AF_PACKET, SOCK_RAW, 0)) >= 0,
		    "socket(AF_PACKET)");
	EXPECT_FAIL((s = socket(AF_NETLINK, SOCK_RAW,
				4 /* NETLINK_SOCK_DIAG */)) >= 0,
		    "socket(AF_NETLINK, NETLINK_SOCK_DIAG)");
	EXPECT_FAIL((s = socket(AF_ALG, SOCK_SEQPACKET, 0)) >= 0,
		    "socket(AF_ALG)");
	/* Loopback inside the run works (NCCL/torch.distributed need it). */
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(l, 1) < 0)
		printf("note: own loopback unusable: %s\n", strerror(errno));
	else
		printf("own loopback usable\n");
	return hostile_achieved;
}
