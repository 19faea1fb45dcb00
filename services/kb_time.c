/* kb_time: ISO 8601 dates and times, one reading for every service
 * (board deadlines in task and set files, API bodies and answers). */
#include "kb_time.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void kb_time_iso8601(int64_t ms, char *out, size_t size)
{
	time_t secs = (time_t)(ms / 1000);
	int frac = (int)(ms % 1000);
	struct tm tm;

	if (frac < 0) {
		frac += 1000;
		secs -= 1;
	}
	gmtime_r(&secs, &tm);
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, frac);
}

/* Reads exactly n digits; returns the value or -1. */
static int digits(const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (c - '0');
	}
	*p += n;
	return v;
}

int kb_time_parse_iso8601(const char *s, int64_t *ms)
{
	struct tm tm;
	int y, mo, d, h = 0, mi = 0, sec = 0, frac_ms = 0, off = 0;

	if (!s)
		return -EINVAL;
	memset(&tm, 0, sizeof(tm));
	if ((y = digits(&s, 4)) < 0 || *s++ != '-' ||
	    (mo = digits(&s, 2)) < 1 || mo > 12 || *s++ != '-' ||
	    (d = digits(&s, 2)) < 1 || d > 31)
		return -EINVAL;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		s++;
		/* One digit or two: upstream's sets write "2025-11-29 6:59". */
		if ((h = digits(&s, s[0] && s[1] == ':' ? 1 : 2)) < 0 ||
		    h > 23 || *s++ != ':' || (mi = digits(&s, 2)) < 0 ||
		    mi > 59)
			return -EINVAL;
		if (*s == ':') {
			s++;
			if ((sec = digits(&s, 2)) < 0 || sec > 60)
				return -EINVAL;
			if (*s == '.' || *s == ',') {
				int scale = 100, any = 0;
				for (s++; *s >= '0' && *s <= '9';
				     s++, any = 1) {
					frac_ms += (*s - '0') * scale;
					scale /= 10;
				}
				if (!any)
					return -EINVAL;
			}
		}
		if (*s == 'Z' || *s == 'z') {
			s++;
		} else if (*s == '+' || *s == '-') {
			int sign = *s++ == '-' ? -1 : 1, oh, om;
			if ((oh = digits(&s, 2)) < 0 || oh > 23)
				return -EINVAL;
			if (*s == ':')
				s++;
			if ((om = digits(&s, 2)) < 0 || om > 59)
				return -EINVAL;
			off = sign * (oh * 60 + om);
		}
	}
	if (*s)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	/* timegm normalises 31 February to March: refuse such dates. */
	struct tm back;
	gmtime_r(&t, &back);
	if (back.tm_mday != d || back.tm_mon != mo - 1)
		return -EINVAL;
	*ms = ((int64_t)t - (int64_t)off * 60) * 1000 + frac_ms;
	return 0;
}
