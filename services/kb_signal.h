/* kb_signal: graceful shutdown on SIGTERM/SIGINT.
 *
 * The handler only sets a volatile sig_atomic_t and writes one byte to a
 * self-pipe (so poll loops wake up). The service's loop notices the flag and
 * drains: stop consuming, finish or abandon the current job, flush, commit,
 * close. A second signal exits at once with status 130.
 */
#ifndef KB_SIGNAL_H
#define KB_SIGNAL_H

/* Installs the handlers for SIGTERM and SIGINT and ignores SIGPIPE.
 * Returns 0 or -errno. Call once from main(). */
int kb_signal_install(void);

/* Nonzero once a stop was requested (by a signal or kb_signal_request_stop). */
int kb_signal_stopping(void);

/* Requests a stop from code, as if SIGTERM arrived. Async-signal-safe. */
void kb_signal_request_stop(void);

/* A file descriptor that becomes readable when a stop is requested, for
 * poll(2)-based loops; -1 before kb_signal_install(). */
int kb_signal_fd(void);

#endif
