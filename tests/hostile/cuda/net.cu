// net (vectoradd, test mode).
//
// Attempts, from custom_kernel: TCP connections to loopback services of
// the host (the canary listener scripts/gpu-hostile.sh starts on
// 127.0.0.1 and ::1 port 47311, and common service ports: ssh, redis,
// kafka, http), to outside addresses (public DNS, the cloud metadata
// service 169.254.169.254, a private 10/8 address), a UDP DNS query to
// 8.8.8.8, a name lookup, and the host's Docker/containerd sockets.
// Each connect has a 1 s limit.
//
// Expected: every attempt blocked; verdict failed (nothing computed); not
// ranked. Any "ACHIEVED" line fails the expectation, and so does a
// connection logged by the script's canary listener.
#include <arpa/inet.h>
#include <cuda_fp16.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "task.h"

#define SAY(...)                                                               \
	do {                                                                   \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
		fflush(stdout);                                                \
	} while (0)

static const int kCanaryPort = 47311;

/* Non-blocking connect with a 1 s limit. 0 connected, else errno. */
static int connect_within(int s, const struct sockaddr *sa, socklen_t len)
{
	int fl = fcntl(s, F_GETFL);
	fcntl(s, F_SETFL, fl | O_NONBLOCK);
	if (connect(s, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	struct pollfd p = {s, POLLOUT, 0};
	int r = poll(&p, 1, 1000);
	if (r == 0)
		return ETIMEDOUT;
	if (r < 0)
		return errno;
	int err = 0;
	socklen_t el = sizeof(err);
	getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el);
	return err;
}

static void try_tcp(const char *ip, int port, const char *what)
{
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;
	if (fam == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((unsigned short)port);
		inet_pton(AF_INET, ip, &a->sin_addr);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((unsigned short)port);
		inet_pton(AF_INET6, ip, &a->sin6_addr);
		len = sizeof(*a);
	}
	int s = socket(fam, SOCK_STREAM, 0);
	if (s < 0) {
		SAY("blocked: socket for %s (%s)", what, strerror(errno));
		return;
	}
	int e = connect_within(s, (struct sockaddr *)&ss, len);
	if (e == 0) {
		static const char msg[] = "KBH hostile net.cu was here\n";
		ssize_t w = write(s, msg, sizeof(msg) - 1);
		SAY("ACHIEVED: connected to %s [%s]:%d (wrote %zd bytes)", what,
		    ip, port, w);
	} else {
		SAY("blocked: %s [%s]:%d (%s)", what, ip, port, strerror(e));
	}
	close(s);
}

static void try_udp_dns(void)
{
	/* A minimal query for "example.com" A. */
	static const unsigned char q[] = {0x12, 0x34, 1,   0,   0,   1,
					  0,    0,    0,   0,   0,   0,
					  7,    'e',  'x', 'a', 'm', 'p',
					  'l',  'e',  3,   'c', 'o', 'm',
					  0,    0,    1,   0,   1};
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(53);
	inet_pton(AF_INET, "8.8.8.8", &a.sin_addr);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0) {
		SAY("blocked: UDP socket (%s)", strerror(errno));
		return;
	}
	if (sendto(s, q, sizeof(q), 0, (struct sockaddr *)&a, sizeof(a)) < 0) {
		SAY("blocked: UDP DNS query to 8.8.8.8 (%s)", strerror(errno));
		close(s);
		return;
	}
	struct pollfd p = {s, POLLIN, 0};
	unsigned char r[512];
	if (poll(&p, 1, 1000) == 1 && recv(s, r, sizeof(r), 0) > 0)
		SAY("ACHIEVED: DNS answer from 8.8.8.8 over UDP");
	else
		SAY("blocked: no UDP DNS answer from 8.8.8.8");
	close(s);
}

static void try_unix(const char *path)
{
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0) {
		SAY("blocked: AF_UNIX socket (%s)", strerror(errno));
		return;
	}
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
		SAY("ACHIEVED: connected to %s", path);
	else
		SAY("blocked: %s (%s)", path, strerror(errno));
	close(s);
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static int done;
	(void)a, (void)b, (void)out, (void)n;
	if (done++)
		return;
	try_tcp("127.0.0.1", kCanaryPort, "the host's canary listener");
	try_tcp("::1", kCanaryPort, "the host's canary listener (IPv6)");
	try_tcp("127.0.0.1", 22, "ssh on loopback");
	try_tcp("127.0.0.1", 6379, "redis on loopback");
	try_tcp("127.0.0.1", 9092, "kafka on loopback");
	try_tcp("127.0.0.1", 8000, "http on loopback");
	try_tcp("127.0.0.1", 80, "http on loopback");
	try_tcp("169.254.169.254", 80, "cloud metadata service");
	try_tcp("8.8.8.8", 53, "public DNS over TCP");
	try_tcp("1.1.1.1", 443, "public HTTPS");
	try_tcp("10.0.0.1", 80, "a private address");
	try_tcp("2606:4700:4700::1111", 443, "public HTTPS (IPv6)");
	try_udp_dns();
	struct addrinfo *res = NULL;
	int g = getaddrinfo("example.com", "80", NULL, &res);
	if (g == 0) {
		SAY("ACHIEVED: resolved example.com");
		freeaddrinfo(res);
	} else {
		SAY("blocked: resolving example.com (%s)", gai_strerror(g));
	}
	try_unix("/var/run/docker.sock");
	try_unix("/run/containerd/containerd.sock");
	/* Nothing is computed: the output stays poisoned. */
}
