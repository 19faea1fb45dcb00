#include "kb_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int kb_log_min_level = KB_LOG_INFO;
static const char *log_svc = "kb";
static int log_json;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void kb_log_init(const char *svc, int min_level, int json)
{
	log_svc = svc ? svc : "kb";
	if (min_level >= KB_LOG_DEBUG && min_level <= KB_LOG_ERROR)
		kb_log_min_level = min_level;
	log_json = json;
}

int kb_log_level_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (s && strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

/* Appends s to buf as JSON string content (without quotes). */
static size_t json_escape(char *buf, size_t size, size_t pos, const char *s)
{
	for (; *s && pos + 7 < size; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[pos++] = '\\';
			buf[pos++] = (char)c;
		} else if (c < 0x20) {
			pos += (size_t)snprintf(buf + pos, size - pos,
						"\\u%04x", c);
		} else {
			buf[pos++] = (char)c;
		}
	}
	return pos;
}

void kb__log(int level, const char *fmt, ...)
{
	char msg[2048], line[4200], ts[40];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	size_t n;

	if (level < KB_LOG_DEBUG || level > KB_LOG_ERROR)
		level = KB_LOG_ERROR;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One event, one line: a message must not forge a second line. */
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", (long)(tv.tv_usec / 1000));

	if (log_json) {
		n = (size_t)snprintf(
			line, sizeof(line),
			"{\"ts\":\"%s\",\"lvl\":\"%s\",\"svc\":\"%s\",\"msg\":\"",
			ts, level_names[level], log_svc);
		n = json_escape(line, sizeof(line), n, msg);
		n += (size_t)snprintf(line + n, sizeof(line) - n, "\"}\n");
	} else {
		n = (size_t)snprintf(line, sizeof(line),
				     "ts=%s lvl=%s svc=%s %s\n", ts,
				     level_names[level], log_svc, msg);
	}
	if (n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* A single write(2) keeps lines from different threads whole. */
	ssize_t w = write(STDERR_FILENO, line, n);
	(void)w;
}
