#include "pbjson.h"

#include <inttypes.h>
#include <stdio.h>
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

static json_t *bytes(const ProtobufCBinaryData *b)
{
	char buf[32];

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
		return json_real(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_real(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(
			f->descriptor, *(const int *)p);

		return ev ? json_string(ev->name) : json_integer(*(const int *)p);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		return json_string(s ? s : "");
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
			const ProtobufCMessage *m = *(ProtobufCMessage *const *)p;
			const char *k = *(char *const *)((const char *)m +
							 m->descriptor->fields[0].offset);
			const char *v = *(char *const *)((const char *)m +
							 m->descriptor->fields[1].offset);

			if (json_object_set_new(out, k ? k : "",
						json_string(v ? v : "")) < 0)
				goto fail;
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
		if (!v || json_object_set_new(o, f->name, v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
