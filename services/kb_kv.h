/* kb_kv: a key and its value, both malloc'd and owned by whoever holds
 * the pair (a task's config and templates, a case's parts, a report's
 * lines). Its own header so that kb_cases.h need not include kb_task.h,
 * whose loader calls kb_cases.
 */
#ifndef KB_KV_H
#define KB_KV_H

struct kb_kv {
	char *key;
	char *value;
};

#endif
