/* kb_metrics_process: the standard process metrics every service serves on
 * /metrics, as Prometheus' client libraries name them, and a build-info
 * gauge:
 *
 *   process_start_time_seconds      gauge, Unix time the process started
 *   process_resident_memory_bytes   gauge, resident set size
 *   process_virtual_memory_bytes    gauge, virtual memory size
 *   process_open_fds                gauge, open file descriptors
 *   process_max_fds                 gauge, the RLIMIT_NOFILE soft limit
 *   kb_build_info{service,revision} gauge, always 1
 *
 * The values are read from /proc/self at each scrape (a collect callback);
 * one that cannot be read keeps its last value.
 */
#ifndef KB_METRICS_PROCESS_H
#define KB_METRICS_PROCESS_H

#include "kb_metrics.h"

/* Registers the families above in m and the callback that fills them.
 * service names the program ("gateway", "worker", "ranker"). Returns 0, or
 * -EINVAL (m or service NULL, or the families already registered) or
 * -ENOSPC (no collect callback left). Call once, at start-up, before
 * scrapes; not thread-safe with other registrations. */
int kb_metrics_process(kb_metrics *m, const char *service);

#endif
