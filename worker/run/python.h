/* kb_python: the interpreter Python tasks run with (KB_PYTHON).
 *
 * Resolved once when the worker starts: the name is looked up in PATH (or
 * taken as a path), made absolute, and asked where it lives -- its
 * prefixes (a virtual environment's and the installation's behind it) and
 * its site-packages, which the sandbox then binds read-only into Python
 * commands, and its bin directory, which goes first on their PATH (ninja
 * and other tools a virtual environment carries). The interpreter is the
 * operator's: it runs here unsandboxed, once, with a bounded wait.
 *
 * Thread-safety: resolve before starting threads; the result is read-only
 * afterwards.
 */
#ifndef KB_PYTHON_H
#define KB_PYTHON_H

#include <limits.h>
#include <stddef.h>

#define KB_PYTHON_DIRS 8

struct kb_python {
	char exe[PATH_MAX];    /* absolute path of the interpreter (not resolved
				 * through links: a venv's python is a link
				 * whose name tells Python where the venv is) */
	char bindir[PATH_MAX]; /* its directory */
	char version[64];      /* "3.11.2" */
	char torch[64];        /* torch's installed version, or "" */
	char *dirs[KB_PYTHON_DIRS + 1]; /* read-only binds, NULL-terminated */
	char store[KB_PYTHON_DIRS][PATH_MAX];
};

/* Resolves name (KB_PYTHON) into *py: PATH lookup of a bare name, the
 * interpreter's own account of its prefixes and site directories (those
 * outside /usr and the other system directories the sandbox always binds
 * are kept), its version and torch's when installed. Returns 0, or
 * -errno with errstr saying why (not found, not runnable, no answer within
 * timeout_s). */
int kb_python_resolve(const char *name, double timeout_s, struct kb_python *py,
		      char *errstr, size_t errstr_size);

/* Parses the interpreter's answer (lines "key=value": version, torch, and
 * any number of "dir=" lines) into *py. Pure; used by kb_python_resolve
 * and tests. Returns 0 or -EINVAL. */
int kb_python_parse(const char *text, struct kb_python *py);

#endif
