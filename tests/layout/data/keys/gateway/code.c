/* The keys check's fixture for C (check_layout.py keys-selftest): the
 * comment may name kb:sub:<id>; a literal may not. */
#include "kb_keys.h"

static const char good[] = KB_KEY_SUB;
static const char bad[] = "kb:sub:%s"; /* layout: expect */
// "kb:rank:%s:%s" in a line comment is fine
