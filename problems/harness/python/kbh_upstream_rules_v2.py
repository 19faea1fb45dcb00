"""How a sealed task's eval.py read its cases, copied into the task as
kbh_upstream_rules.py (services/kb_seal.c's known[] names the versions
that read them so): the second rule, upstream's helion and amd_202602
versions.

A case line's part is `key: value` with key [a-zA-Z_]\\w* (underscores
and digits after the first character) and value an integer [+-]?[0-9]+
(an int), or a word [a-zA-Z_]\\w*, of which exactly "true" and "false"
become True and False and the rest stay strings ("True" too).
"""
KEY = r"[a-zA-Z_]\w*"
WORD = r"[a-zA-Z_]\w*"
BOOLS = True
