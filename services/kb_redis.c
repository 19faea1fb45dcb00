/* kb_redis: URL parsing, connecting and Lua scripts on hiredis
 * (see kb_redis.h). The URL parser is a pure function so that its tests
 * need no server.
 */
#include "kb_redis.h"
#include "kb_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* Copies s[0..n) into dst (size bytes) NUL-terminated; -1 if it won't fit. */
static int copy_n(char *dst, size_t size, const char *s, size_t n)
{
	if (n >= size)
		return -1;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

/* Parses s[0..n) as a decimal in [min, max]; digits only, no sign. */
static int parse_uint(const char *s, size_t n, long min, long max, long *out)
{
	long v = 0;

	if (n == 0 || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* The URL for error messages, credentials replaced by "***". */
static void redact(const char *url, char *buf, size_t size)
{
	const char *p = url + strlen("redis://");
	const char *at = NULL;

	for (const char *q = p; *q && *q != '/'; q++)
		if (*q == '@')
			at = q;
	if (at)
		snprintf(buf, size, "redis://***%s", at);
	else
		snprintf(buf, size, "%s", url);
}

static int parse_unix(const char *url, const char *path,
		      struct kb_redis_url *out, char *errstr,
		      size_t errstr_size)
{
	if (path[0] != '/') {
		kb_seterr(errstr, errstr_size,
			  "redis url %s: the socket path must be absolute",
			  url);
		return -EINVAL;
	}
	if (copy_n(out->path, sizeof(out->path), path, strlen(path)) != 0) {
		kb_seterr(errstr, errstr_size,
			  "redis url: socket path longer than %zu bytes",
			  sizeof(out->path) - 1);
		return -EINVAL;
	}
	out->is_unix = 1;
	return 0;
}

int kb_redis_url_parse(const char *url, struct kb_redis_url *out, char *errstr,
		       size_t errstr_size)
{
	static const char scheme[] = "redis://";
	const char *p, *auth_end, *host, *host_end, *port = NULL, *db = NULL;
	size_t port_len = 0;
	char safe[300];
	long v;

	memset(out, 0, sizeof(*out));
	out->db = -1;
	out->port = 6379;
	if (!url || !*url) {
		kb_seterr(errstr, errstr_size, "redis url is empty");
		return -EINVAL;
	}
	if (strncmp(url, "unix://", 7) == 0)
		return parse_unix(url, url + 7, out, errstr, errstr_size);
	if (strncmp(url, "unix:", 5) == 0)
		return parse_unix(url, url + 5, out, errstr, errstr_size);
	if (strncmp(url, scheme, sizeof(scheme) - 1) != 0) {
		/* Not echoed: a mistyped URL may well carry a password. */
		kb_seterr(errstr, errstr_size,
			  "redis url must start with redis:// or unix:");
		return -EINVAL;
	}
	p = url + sizeof(scheme) - 1;
	redact(url, safe, sizeof(safe));

	/* [[user]:password@] — the last '@' before the path ends it. */
	auth_end = NULL;
	for (const char *q = p; *q && *q != '/'; q++)
		if (*q == '@')
			auth_end = q;
	if (auth_end) {
		const char *colon = memchr(p, ':', (size_t)(auth_end - p));
		if (!colon) {
			kb_seterr(
				errstr, errstr_size,
				"redis url: credentials must be [user]:password@");
			return -EINVAL;
		}
		if (copy_n(out->user, sizeof(out->user), p,
			   (size_t)(colon - p)) != 0 ||
		    copy_n(out->password, sizeof(out->password), colon + 1,
			   (size_t)(auth_end - colon - 1)) != 0) {
			kb_seterr(errstr, errstr_size,
				  "redis url: user or password too long");
			return -EINVAL;
		}
		p = auth_end + 1;
	}

	/* host: a bracketed IPv6 address or up to ':' or '/'. */
	if (*p == '[') {
		host = p + 1;
		host_end = strchr(host, ']');
		if (!host_end) {
			kb_seterr(errstr, errstr_size,
				  "redis url %s: missing ']'", safe);
			return -EINVAL;
		}
		p = host_end + 1;
		if (*p && *p != ':' && *p != '/') {
			kb_seterr(errstr, errstr_size,
				  "redis url %s: junk after the address", safe);
			return -EINVAL;
		}
	} else {
		host = p;
		host_end = p + strcspn(p, ":/");
		p = host_end;
	}
	if (host_end == host) {
		kb_seterr(errstr, errstr_size, "redis url %s: no host", safe);
		return -EINVAL;
	}
	if (copy_n(out->host, sizeof(out->host), host,
		   (size_t)(host_end - host)) != 0) {
		kb_seterr(errstr, errstr_size, "redis url: host name too long");
		return -EINVAL;
	}
	if (*p == ':') {
		port = p + 1;
		port_len = strcspn(port, "/");
		p = port + port_len;
		if (parse_uint(port, port_len, 1, 65535, &v) != 0) {
			kb_seterr(errstr, errstr_size,
				  "redis url %s: port must be 1..65535", safe);
			return -EINVAL;
		}
		out->port = (int)v;
	}
	if (*p == '/') {
		db = p + 1;
		if (*db) {
			if (parse_uint(db, strlen(db), 0, 1000000, &v) != 0) {
				kb_seterr(errstr, errstr_size,
					  "redis url %s: db must be a number",
					  safe);
				return -EINVAL;
			}
			out->db = (int)v;
		}
	}
	return 0;
}

/* Runs one command given as argv and checks the reply is not an error. */
static int simple_command(redisContext *c, const char *what, int argc,
			  const char **argv, char *errstr, size_t errstr_size)
{
	redisReply *r = redisCommandArgv(c, argc, argv, NULL);

	if (!r) {
		kb_seterr(errstr, errstr_size, "redis %s: %s", what, c->errstr);
		return -EIO;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		kb_seterr(errstr, errstr_size, "redis %s: %s", what, r->str);
		freeReplyObject(r);
		return -EIO;
	}
	freeReplyObject(r);
	return 0;
}

redisContext *kb_redis_connect(const char *url, int timeout_ms, char *errstr,
			       size_t errstr_size)
{
	struct kb_redis_url u;
	struct timeval tv;
	redisContext *c;
	char where[300];

	if (kb_redis_url_parse(url, &u, errstr, errstr_size) != 0)
		return NULL;
	if (timeout_ms <= 0)
		timeout_ms = 1;
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	if (u.is_unix) {
		snprintf(where, sizeof(where), "unix:%s", u.path);
		c = redisConnectUnixWithTimeout(u.path, tv);
	} else {
		snprintf(where, sizeof(where), "%s:%d", u.host, u.port);
		c = redisConnectWithTimeout(u.host, u.port, tv);
	}
	if (!c) {
		kb_seterr(errstr, errstr_size, "redis %s: out of memory",
			  where);
		return NULL;
	}
	if (c->err) {
		kb_seterr(errstr, errstr_size, "redis %s: %s", where,
			  c->errstr);
		redisFree(c);
		return NULL;
	}
	if (redisSetTimeout(c, tv) != REDIS_OK) {
		kb_seterr(errstr, errstr_size,
			  "redis %s: cannot set timeout: %s", where, c->errstr);
		redisFree(c);
		return NULL;
	}
	if (u.password[0]) {
		const char *argv[3];
		int argc = 0, rc;
		argv[argc++] = "AUTH";
		if (u.user[0])
			argv[argc++] = u.user;
		argv[argc++] = u.password;
		rc = simple_command(c, "AUTH", argc, argv, errstr, errstr_size);
		memset(u.password, 0, sizeof(u.password));
		if (rc != 0) {
			redisFree(c);
			return NULL;
		}
	}
	if (u.db >= 0) {
		char db[16];
		snprintf(db, sizeof(db), "%d", u.db);
		const char *argv[2] = {"SELECT", db};
		if (simple_command(c, "SELECT", 2, argv, errstr, errstr_size) !=
		    0) {
			redisFree(c);
			return NULL;
		}
	}
	return c;
}

int kb_redis_script_load(redisContext *c, struct kb_redis_script *s,
			 char *errstr, size_t errstr_size)
{
	const char *argv[3] = {"SCRIPT", "LOAD", s ? s->src : NULL};
	redisReply *r;

	if (!s || !s->src) {
		kb_seterr(errstr, errstr_size, "redis SCRIPT LOAD: no script");
		return -EINVAL;
	}
	r = redisCommandArgv(c, 3, argv, NULL);
	if (!r) {
		kb_seterr(errstr, errstr_size, "redis SCRIPT LOAD: %s",
			  c->errstr);
		return -EIO;
	}
	if (r->type != REDIS_REPLY_STRING || r->len != 40) {
		kb_seterr(errstr, errstr_size, "redis SCRIPT LOAD: %s",
			  r->type == REDIS_REPLY_ERROR ? r->str
						       : "unexpected reply");
		freeReplyObject(r);
		return -EIO;
	}
	memcpy(s->sha, r->str, 40);
	s->sha[40] = '\0';
	freeReplyObject(r);
	return 0;
}

static redisReply *evalsha(redisContext *c, const struct kb_redis_script *s,
			   int nkeys, int argc, const char **argv,
			   const size_t *argvlen, char *errstr,
			   size_t errstr_size)
{
	int n = argc + 3;
	const char **av = calloc((size_t)n, sizeof(*av));
	size_t *al = calloc((size_t)n, sizeof(*al));
	char nk[16];
	redisReply *r = NULL;

	if (!av || !al) {
		kb_seterr(errstr, errstr_size, "redis EVALSHA: out of memory");
		goto out;
	}
	snprintf(nk, sizeof(nk), "%d", nkeys);
	av[0] = "EVALSHA";
	av[1] = s->sha;
	av[2] = nk;
	for (int i = 0; i < 3; i++)
		al[i] = strlen(av[i]);
	for (int i = 0; i < argc; i++) {
		av[3 + i] = argv[i];
		al[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
	}
	r = redisCommandArgv(c, n, av, al);
	if (!r)
		kb_seterr(errstr, errstr_size, "redis EVALSHA: %s", c->errstr);
out:
	free(av);
	free(al);
	return r;
}

redisReply *kb_redis_eval(redisContext *c, struct kb_redis_script *s, int nkeys,
			  int argc, const char **argv, const size_t *argvlen,
			  char *errstr, size_t errstr_size)
{
	redisReply *r;

	if (!s || nkeys < 0 || argc < nkeys || (argc > 0 && !argv)) {
		kb_seterr(errstr, errstr_size, "redis EVALSHA: bad arguments");
		return NULL;
	}
	if (s->sha[0] == '\0' &&
	    kb_redis_script_load(c, s, errstr, errstr_size) != 0)
		return NULL;
	r = evalsha(c, s, nkeys, argc, argv, argvlen, errstr, errstr_size);
	/* After a restart or SCRIPT FLUSH the server forgot the script:
	 * load it again and retry, once. */
	if (r && r->type == REDIS_REPLY_ERROR &&
	    strncmp(r->str, "NOSCRIPT", 8) == 0) {
		freeReplyObject(r);
		if (kb_redis_script_load(c, s, errstr, errstr_size) != 0)
			return NULL;
		r = evalsha(c, s, nkeys, argc, argv, argvlen, errstr,
			    errstr_size);
	}
	return r;
}
