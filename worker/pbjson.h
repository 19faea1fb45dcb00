/* kb_pbjson: any protobuf-c message as JSON, driven by its descriptor.
 *
 * Field names are the .proto names; enums are their names ("VERDICT_PASSED");
 * bytes are base64-free: valid UTF-8 is a string, anything else is
 * "<N bytes>"; 64-bit integers above 2^53 become strings (as proto3 JSON
 * does); a repeated kb.KeyValue becomes an object (the harness map, in
 * order); an unset oneof member is left out.
 *
 * Pure and thread-safe.
 */
#ifndef KB_PBJSON_H
#define KB_PBJSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

/* Returns a new reference, or NULL when out of memory. */
json_t *kb_pbjson(const ProtobufCMessage *m);

#endif
