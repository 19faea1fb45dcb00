#include "pbjson.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

#define JSON_SAFE_INT (1ULL << 53)

static json_t *u64(uint64_t v)
{
	char buf[24];

	if (v <= JSON_SAFE_INT)
		return json_integer((json_int_t)v);
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return json_string(buf);
}

static json_t *i64(int64_t v)
{
	char buf[24];

	if (v <= (int64_t)JSON_SAFE_INT && v >= -(int64_t)JSON_SAFE_INT)
		return json_integer((json_int_t)v);
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return json_string(buf);
}

/* A string as JSON: bytes that are not UTF-8 (a truncated or binary output
 * line) become U+FFFD, so that one bad byte never loses the whole result. */
static json_t *str(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *clean;
	json_t *j;

	if (kb_utf8_valid(s, n))
		return json_stringn(s, n);
	clean = malloc(3 * n + 1);
	if (!clean)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t len = 1;

		while (len <= 4 && i + len <= n && !kb_utf8_valid(s + i, len))
			len++;
		if (len <= 4 && i + len <= n) {
			memcpy(clean + o, s + i, len);
			o += len;
			i += len;
		} else {
			memcpy(clean + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	j = json_stringn(clean, o);
	free(clean);
	return j;
}

/* JSON has no NaN or infinity: null. */
static json_t *real(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *bytes(const ProtobufCBinaryData *b)
{
	char buf[32];

	if (b->len == 0) /* data may be NULL, which json_stringn refuses */
		return json_string("");
	if (kb_utf8_valid(b->data, b->len) && !memchr(b->data, 0, b->len))
		return json_stringn((const char *)b->data, b->len);
	snprintf(buf, sizeof(buf), "<%zu bytes>", b->len);
	return json_string(buf);
}

static json_t *value(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return i64(*(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return u64(*(const uint64_t *)p);
	case PROTOBUF_C_TYPE_FLOAT:
		return real(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return real(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(f->descriptor,
							     *(const int *)p);

		return ev ? json_string(ev->name)
			  : json_integer(*(const int *)p);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		return str(s ? s : "");
	}
	case PROTOBUF_C_TYPE_BYTES:
		return bytes(p);
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *m = *(ProtobufCMessage *const *)p;

		return m ? kb_pbjson(m) : json_null();
	}
	}
	return json_null();
}

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	default:
		return 4;
	}
}

/* A repeated message with exactly the fields key and value (kb.KeyValue,
 * map entries) reads best as an object. */
static int is_pair_message(const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;

	return f->type == PROTOBUF_C_TYPE_MESSAGE && d->n_fields == 2 &&
	       strcmp(d->fields[0].name, "key") == 0 &&
	       strcmp(d->fields[1].name, "value") == 0 &&
	       d->fields[0].type == PROTOBUF_C_TYPE_STRING &&
	       d->fields[1].type == PROTOBUF_C_TYPE_STRING;
}

static json_t *repeated(const ProtobufCFieldDescriptor *f, const char *base)
{
	size_t n = *(const size_t *)(base + f->quantifier_offset);
	const char *arr = *(char *const *)(base + f->offset);
	const size_t size = elem_size(f->type);
	json_t *out = is_pair_message(f) ? json_object() : json_array();

	for (size_t i = 0; out && i < n; i++) {
		const void *p = arr + i * size;

		if (json_is_object(out)) {
			const ProtobufCMessage *m =
				*(ProtobufCMessage *const *)p;
			const char *k = *(
				char *const *)((const char *)m +
					       m->descriptor->fields[0].offset);
			const char *v = *(
				char *const *)((const char *)m +
					       m->descriptor->fields[1].offset);

			json_t *key = str(k ? k : "");

			if (!key ||
			    json_object_set_new(out, json_string_value(key),
						str(v ? v : "")) < 0) {
				json_decref(key);
				goto fail;
			}
			json_decref(key);
		} else if (json_array_append_new(out, value(f, p)) < 0) {
			goto fail;
		}
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

json_t *kb_pbjson(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;
	json_t *o = json_object();

	for (unsigned i = 0; o && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		json_t *v;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
			v = repeated(f, base);
		else
			v = value(f, base + f->offset);
		/* A value JSON cannot hold loses that field, not the result. */
		if (!v) {
			fprintf(stderr, "kb-worker: %s.%s has no JSON form\n",
				d->short_name, f->name);
			v = json_null();
		}
		if (json_object_set_new(o, f->name, v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
