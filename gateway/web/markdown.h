/* kb_web_md: problem descriptions, a small and safe subset of Markdown,
 * into HTML. Pure (no I/O), thread-safe.
 *
 * Blocks: ATX headings ("# ..." to "###### ..."; shown two levels down,
 * h3 to h6, since the page owns h1 and h2), paragraphs, fenced code
 * (``` or ~~~, an optional language word), indented code (four spaces or
 * a tab, after a blank line and outside a list), and one level of
 * unordered ("- ", "* ", "+ ") or ordered ("1. ") list whose items may
 * continue on indented lines. Inline: `code`, **strong**, *emphasis* and
 * _emphasis_ (never inside a word, so custom_kernel stays as written),
 * and [text](url) links whose url starts with http:// or https://.
 *
 * Safety: every character of the source reaches the page HTML-escaped;
 * raw HTML in the source is shown as text, never passed through, and a
 * link to any other scheme (javascript:, data:, a relative path) is shown
 * as text. Links open with rel="nofollow noopener noreferrer".
 */
#ifndef KB_WEB_MARKDOWN_H
#define KB_WEB_MARKDOWN_H

#include "kb_util.h"

/* Appends the HTML of src (NULL: nothing) to b. Returns 0, or -ENOMEM
 * (b is then incomplete). */
int kb_web_md(struct kb_buf *b, const char *src);

#endif
