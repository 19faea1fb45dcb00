/* kb_budget: timing budgets, measured by tests and judged by a benchmark.
 *
 * On a loaded machine (a parallel build beside `make test`, CI on two
 * cores) any duration can grow without bound, so a test asserts only what
 * holds under any load: lower bounds, orderings, and upper bounds set by
 * what the wrong behaviour would take (a run that waited for a 30 s sleep
 * took 30 s). How fast something should be is a budget: the test prints
 * it, and bench/budgets.sh, run on a quiet machine, fails when one is
 * exceeded.
 *
 * kb_budget() prints "measure: WHAT VALUE UNIT (budget BUDGET)" on stderr,
 * and, only when KB_TEST_BUDGETS=1 is set (by bench/budgets.sh), fails the
 * running Check test when VALUE > BUDGET. Returns 1 when within budget.
 * Thread-safe if Check's assertions are (call it from the test's thread).
 */
#ifndef KB_BUDGET_H
#define KB_BUDGET_H

int kb_budget(const char *what, double value, double budget, const char *unit);

/* 1 when budgets are judged (KB_TEST_BUDGETS=1). */
int kb_budget_enforced(void);

#endif
