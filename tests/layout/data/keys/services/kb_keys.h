/* The fixture's key schema (check_layout.py keys-selftest). */
#define KB_KEY_SUB "kb:sub:%s"
#define KB_KEY_RANK "kb:rank:%s:%s"
