/* portpin: lets kb-devbroker choose the ports of librdkafka's mock brokers.
 *
 * librdkafka 2.0.2 has no API for the mock cluster's listen ports: each mock
 * broker binds 127.0.0.1 port 0 and takes whatever the kernel hands out.
 * kb-devbroker defines bind(2) itself (portpin.c); the dynamic linker then
 * resolves librdkafka's calls to it. While armed, a bind of an IPv4
 * loopback address with port 0 gets the next pinned port instead; every
 * other bind passes through unchanged. Only kb-devbroker links this.
 *
 * Thread-safety: arm/disarm from one thread; the bind() wrapper itself is
 * safe from any thread.
 */
#ifndef KB_PORTPIN_H
#define KB_PORTPIN_H

/* The next n loopback port-0 binds take ports first, first+1, ... */
void kb__portpin_arm(int first, int n);

/* Back to plain bind(). Returns how many pinned ports were not used. */
int kb__portpin_disarm(void);

#endif
