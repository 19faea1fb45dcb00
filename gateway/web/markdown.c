/* kb_web_md: see markdown.h. One pass over the lines for the blocks; the
 * text of a paragraph, heading or list item is gathered into one string
 * (lines joined by '\n') and rendered inline. Nothing of the source is
 * copied to the page unescaped: the only markup out is the markup this
 * file writes. */
#include "markdown.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "render.h"

/* Emphasis nests at most this deep: a hostile description cannot make
 * the recursion deep. */
#define INLINE_DEPTH 4

struct line {
	const char *s;
	size_t n;
};

struct md {
	struct kb_buf *b;
	const char *p; /* the next line */
	int rc;
};

/* ---- lines ---- */

static int peek(const struct md *m, struct line *l)
{
	const char *nl;

	if (!*m->p)
		return 0;
	nl = strchr(m->p, '\n');
	l->s = m->p;
	l->n = nl ? (size_t)(nl - m->p) : strlen(m->p);
	if (l->n && l->s[l->n - 1] == '\r')
		l->n--;
	return 1;
}

static void advance(struct md *m)
{
	const char *nl = strchr(m->p, '\n');

	m->p = nl ? nl + 1 : m->p + strlen(m->p);
}

static size_t indent(const struct line *l)
{
	size_t w = 0;

	for (size_t i = 0; i < l->n && (l->s[i] == ' ' || l->s[i] == '\t'); i++)
		w += l->s[i] == '\t' ? 4 - w % 4 : 1;
	return w;
}

static struct line trimmed(struct line l)
{
	while (l.n && (*l.s == ' ' || *l.s == '\t')) {
		l.s++;
		l.n--;
	}
	while (l.n && (l.s[l.n - 1] == ' ' || l.s[l.n - 1] == '\t'))
		l.n--;
	return l;
}

static int blank(const struct line *l)
{
	return trimmed(*l).n == 0;
}

/* "```" or "~~~" (at most three spaces in): its character, else 0. */
static char fence(const struct line *l)
{
	struct line t = trimmed(*l);

	if (indent(l) > 3 || t.n < 3)
		return 0;
	if (strncmp(t.s, "```", 3) == 0 || strncmp(t.s, "~~~", 3) == 0)
		return t.s[0];
	return 0;
}

/* "# text": the level (1-6) and the text, else 0. */
static int heading(const struct line *l, struct line *text)
{
	struct line t = trimmed(*l);
	int level = 0;

	if (indent(l) > 3)
		return 0;
	while ((size_t)level < t.n && t.s[level] == '#')
		level++;
	if (level < 1 || level > 6 ||
	    ((size_t)level < t.n && t.s[level] != ' '))
		return 0;
	text->s = t.s + level;
	text->n = t.n - (size_t)level;
	*text = trimmed(*text);
	while (text->n && text->s[text->n - 1] == '#')
		text->n--;
	*text = trimmed(*text);
	return level;
}

/* A list item's marker: 'u' ("- ", "* ", "+ ") or 'o' ("1. ", "2) "),
 * with the item's text after it; else 0. */
static char item(const struct line *l, struct line *text)
{
	struct line t = trimmed(*l);
	size_t i = 0;
	char kind;

	if (indent(l) > 3 || t.n < 2)
		return 0;
	if (strchr("-*+", t.s[0])) {
		kind = 'u';
		i = 1;
	} else {
		while (i < t.n && i < 9 && isdigit((unsigned char)t.s[i]))
			i++;
		if (i == 0 || i >= t.n || (t.s[i] != '.' && t.s[i] != ')'))
			return 0;
		kind = 'o';
		i++;
	}
	if (i < t.n && t.s[i] != ' ' && t.s[i] != '\t')
		return 0;
	text->s = t.s + i;
	text->n = t.n - i;
	*text = trimmed(*text);
	return kind;
}

/* ---- inline ---- */

static void put(struct md *m, const char *s)
{
	if (m->rc == 0)
		m->rc = kb_buf_append(m->b, s, strlen(s));
}

static void text(struct md *m, const char *s, size_t n)
{
	if (m->rc == 0)
		m->rc = kb_web_escn(m->b, s, n);
}

static int word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* What one run of inline text has found missing: from absolute offset
 * none[k] on, no closer of kind k follows (a later opener would scan a
 * part of what the failed scan saw), so a hostile run of openers costs
 * one scan per kind, not one per opener. */
enum { CLOSE_EM_STAR, CLOSE_STRONG, CLOSE_EM_UNDER, CLOSE_PAREN, NCLOSE };
struct scan {
	const char *s; /* the run */
	size_t n;
	size_t none[NCLOSE];
};

/* The closing delimiter d (1 or 2 characters) of an emphasis opened at
 * offset i (its text from i + w), or 0 when there is none: the text
 * neither starts nor ends with a space, and '_' closes only at a word's
 * end. Returns the closer's offset from i. */
static size_t closing(struct scan *sc, size_t i, int kind, const char *d,
		      size_t w)
{
	const char *s = sc->s + i;
	size_t n = sc->n - i;

	if (w >= n || s[w] == ' ' || s[w] == '\n' || i >= sc->none[kind])
		return 0;
	for (size_t j = w + 1; j + w <= n; j++) {
		if (strncmp(s + j, d, w) != 0 || s[j - 1] == ' ' ||
		    s[j - 1] == '\n')
			continue;
		if (d[0] == '_' && j + w < n && word_char(s[j + w]))
			continue;
		return j;
	}
	sc->none[kind] = i;
	return 0;
}

static int http_url(const char *s, size_t n)
{
	if (!((n > 7 && strncmp(s, "http://", 7) == 0) ||
	      (n > 8 && strncmp(s, "https://", 8) == 0)))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ')
			return 0;
	return 1;
}

static void inlines(struct md *m, const char *s, size_t n, int depth);

/* [text](http...) at offset i: its length, or 0 when it is not one. The
 * text holds no bracket, so the search for its end stops at the next
 * bracket of either kind. */
static size_t link(struct md *m, struct scan *sc, size_t i, int depth)
{
	const char *s = sc->s + i, *close, *end;
	size_t n = sc->n - i, k = 1;

	while (k < n && s[k] != ']' && s[k] != '[')
		k++;
	if (k + 1 >= n || s[k] != ']' || s[k + 1] != '(' ||
	    i >= sc->none[CLOSE_PAREN])
		return 0;
	close = s + k;
	end = memchr(close + 2, ')', n - k - 2);
	if (!end)
		sc->none[CLOSE_PAREN] = i;
	if (!end || !http_url(close + 2, (size_t)(end - close - 2)))
		return 0;
	put(m, "<a rel=\"nofollow noopener noreferrer\" href=\"");
	text(m, close + 2, (size_t)(end - close - 2));
	put(m, "\">");
	inlines(m, s + 1, k - 1, depth + 1);
	put(m, "</a>");
	return (size_t)(end - s) + 1;
}

static size_t code(struct md *m, const char *s, size_t n)
{
	const char *e = memchr(s + 1, '`', n - 1);

	if (!e)
		return 0;
	put(m, "<code>");
	text(m, s + 1, (size_t)(e - s - 1));
	put(m, "</code>");
	return (size_t)(e - s) + 1;
}

/* Emphasis (w 1) or strong (w 2) opened at offset i: its length, else 0. */
static size_t emphasis(struct md *m, struct scan *sc, size_t i, size_t w,
		       int depth)
{
	const char *s = sc->s + i;
	int kind = w == 2      ? CLOSE_STRONG
		   : *s == '*' ? CLOSE_EM_STAR
			       : CLOSE_EM_UNDER;
	size_t j = closing(sc, i, kind,
			   w == 2      ? "**"
			   : *s == '*' ? "*"
				       : "_",
			   w);

	if (!j)
		return 0;
	put(m, w == 2 ? "<strong>" : "<em>");
	inlines(m, s + w, j - w, depth + 1);
	put(m, w == 2 ? "</strong>" : "</em>");
	return j + w;
}

/* A span at offset i (code, strong, emphasis, link): its length, else 0. */
static size_t span(struct md *m, struct scan *sc, size_t i, int depth)
{
	const char *s = sc->s;
	size_t left = sc->n - i, used;

	if (s[i] == '`')
		return code(m, s + i, left);
	if (depth >= INLINE_DEPTH)
		return 0;
	if (s[i] == '[')
		return link(m, sc, i, depth);
	if (s[i] == '*' && left > 1 && s[i + 1] == '*' &&
	    (used = emphasis(m, sc, i, 2, depth)))
		return used;
	if (i > 0 && word_char(s[i - 1]))
		return 0;
	return emphasis(m, sc, i, 1, depth);
}

static void inlines(struct md *m, const char *s, size_t n, int depth)
{
	struct scan sc = {s, n, {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX}};
	size_t run = 0;

	for (size_t i = 0; i < n && m->rc == 0;) {
		size_t used = 0;
		if (s[i] && strchr("`*_[", s[i])) {
			text(m, s + run, i - run);
			used = span(m, &sc, i, depth);
			run = used ? i + used : i;
		}
		i += used ? used : 1;
	}
	text(m, s + run, n - run);
}

/* ---- blocks ---- */

/* Appends line l (trimmed) to the gathered text g. */
static void gather(struct md *m, struct kb_buf *g, const struct line *l)
{
	struct line t = trimmed(*l);

	if (m->rc == 0 && g->len)
		m->rc = kb_buf_append(g, "\n", 1);
	if (m->rc == 0)
		m->rc = kb_buf_append(g, t.s, t.n);
}

static void gathered(struct md *m, struct kb_buf *g, const char *open,
		     const char *close)
{
	put(m, open);
	inlines(m, g->data ? g->data : "", g->len, 0);
	put(m, close);
	kb_buf_free(g);
}

/* Whether l starts a block of its own (it ends a paragraph). */
static int starts_block(const struct line *l)
{
	struct line t;

	return blank(l) || fence(l) || heading(l, &t) || item(l, &t);
}

static void fenced(struct md *m, char ch)
{
	struct line l;

	advance(m); /* the opening fence; its language word is not shown */
	put(m, "<pre><code>");
	while (peek(m, &l)) {
		advance(m);
		if (fence(&l) == ch)
			break;
		text(m, l.s, l.n);
		put(m, "\n");
	}
	put(m, "</code></pre>");
}

static void indented(struct md *m)
{
	struct line l;
	size_t blanks = 0;

	put(m, "<pre><code>");
	while (peek(m, &l) && (blank(&l) || indent(&l) >= 4)) {
		advance(m);
		if (blank(&l)) {
			blanks++;
			continue;
		}
		/* Blank lines inside the block are kept, trailing ones not. */
		for (; blanks; blanks--)
			put(m, "\n");
		size_t skip = 0;
		for (size_t w = 0; skip < l.n && w < 4; skip++)
			w += l.s[skip] == '\t' ? 4 - w % 4 : 1;
		text(m, l.s + skip, l.n - skip);
		put(m, "\n");
	}
	put(m, "</code></pre>");
}

/* The next non-blank line after blank ones (m->p unchanged). */
static int after_blanks(const struct md *m, struct line *l)
{
	struct md look = *m;

	while (peek(&look, l) && blank(l))
		advance(&look);
	return *look.p != '\0';
}

static void list(struct md *m, char kind)
{
	struct line l, t, next;
	struct kb_buf g = {0};

	put(m, kind == 'u' ? "<ul>" : "<ol>");
	while (m->rc == 0 && peek(m, &l) && item(&l, &t) == kind) {
		advance(m);
		gather(m, &g, &t);
		/* Its continuation: indented lines, or lines that start no
		 * block; a blank line ends the item. */
		while (peek(m, &l) && !blank(&l) &&
		       (indent(&l) >= 2 || !starts_block(&l)) &&
		       !item(&l, &t)) {
			advance(m);
			gather(m, &g, &l);
		}
		gathered(m, &g, "<li>", "</li>");
		if (peek(m, &l) && blank(&l) && after_blanks(m, &next) &&
		    item(&next, &t) == kind)
			while (peek(m, &l) && blank(&l))
				advance(m);
	}
	put(m, kind == 'u' ? "</ul>" : "</ol>");
}

static void paragraph(struct md *m)
{
	struct line l;
	struct kb_buf g = {0};

	/* The first line starts it whatever it looks like (block() chose). */
	peek(m, &l);
	gather(m, &g, &l);
	advance(m);
	while (peek(m, &l) && !starts_block(&l)) {
		gather(m, &g, &l);
		advance(m);
	}
	gathered(m, &g, "<p>", "</p>");
}

static void block(struct md *m, int after_blank)
{
	struct line l, t;
	char c;
	int level;

	peek(m, &l);
	if ((c = fence(&l))) {
		fenced(m, c);
	} else if ((level = heading(&l, &t))) {
		static const char *const tags[][2] = {{"<h3>", "</h3>"},
						      {"<h4>", "</h4>"},
						      {"<h5>", "</h5>"},
						      {"<h6>", "</h6>"}};
		struct kb_buf g = {0};
		int k = level > 4 ? 3 : level - 1;
		gather(m, &g, &t);
		advance(m);
		gathered(m, &g, tags[k][0], tags[k][1]);
	} else if (after_blank && indent(&l) >= 4) {
		indented(m);
	} else if ((c = item(&l, &t))) {
		list(m, c);
	} else {
		paragraph(m);
	}
}

int kb_web_md(struct kb_buf *b, const char *src)
{
	struct md m = {b, src ? src : "", 0};
	struct line l;
	int after_blank = 1;

	while (m.rc == 0 && peek(&m, &l)) {
		if (blank(&l)) {
			advance(&m);
			after_blank = 1;
			continue;
		}
		block(&m, after_blank);
		after_blank = 0;
	}
	if (m.rc == 0)
		m.rc = kb_buf_append(b, "", 0);
	return m.rc;
}
