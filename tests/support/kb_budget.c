/* kb_budget: see kb_budget.h. */
#include "kb_budget.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kb_budget_enforced(void)
{
	const char *v = getenv("KB_TEST_BUDGETS");

	return v && strcmp(v, "1") == 0;
}

int kb_budget(const char *what, double value, double budget, const char *unit)
{
	int ok = value <= budget;

	fprintf(stderr, "measure: %s %.3f %s (budget %.3f)%s\n", what, value,
		unit, budget, ok ? "" : " OVER BUDGET");
	if (kb_budget_enforced())
		ck_assert_msg(ok, "%s: %.3f %s, over its budget of %.3f %s",
			      what, value, unit, budget, unit);
	return ok;
}
