/* noop: a benchmark fixture, not a leaderboard. The submission gets one
 * 256-byte input and one 256-byte output and may do anything (the check
 * always passes): bench/gpu/run.sh uses it to measure the harness's own
 * per-sample cost and timing floor.
 */
#ifndef NOOP_TASK_H
#define NOOP_TASK_H

extern "C" void custom_kernel(const void *in, void *out);

#endif
