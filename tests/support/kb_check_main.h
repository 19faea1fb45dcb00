/* kb_check_main: the one way our Check suites run.
 *
 * kb_check_run() runs suite s with the default (forking) runner and
 * CK_NORMAL output, frees it, and returns the process exit status:
 * EXIT_SUCCESS when every test passed, EXIT_FAILURE otherwise. A suite's
 * main() is `return kb_check_run(suite());`. Not thread-safe (Check's
 * runner is not). */
#ifndef KB_CHECK_MAIN_H
#define KB_CHECK_MAIN_H

#include <check.h>

int kb_check_run(Suite *s);

#endif
