"""How a sealed task's eval.py read its cases, copied into the task as
kbh_upstream_rules.py (services/kb_seal.c's known[] names the versions
that read them so): the first rule, upstream's pmpp, pmpp_v2, nvidia and
the early bioml, helion and linalg versions.

A case line's part is `key: value` with key [a-zA-Z]+ and value an
integer [+-]?[0-9]+ (an int) or a word [a-zA-Z]+ (kept as the string:
"True" and "false" are strings too).
"""
KEY = r"[a-zA-Z]+"
WORD = r"[a-zA-Z]+"
BOOLS = False
