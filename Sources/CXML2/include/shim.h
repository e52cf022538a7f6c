#ifndef HAUL_CXML2_SHIM_H
#define HAUL_CXML2_SHIM_H
/* libxml2 (Debian's libxml2-dev) as a streaming SAX2 push parser for untrusted documents (xml.c): metalinks.
   Configured so that a document cannot make it read anything or grow: no network (XML_PARSE_NONET), no
   external subset or external entity loaded (no XML_PARSE_DTDLOAD, no resolver), no entity substituted (no
   XML_PARSE_NOENT), no attribute defaulted from a DTD, libxml2's own size limits kept (no XML_PARSE_HUGE), and a
   document that declares any entity refused at the declaration ("billion laughs" is never reached). libxml2
   is loaded when first used (CLoadOnUse), so a download that reads no metalink never maps it, nor ICU, which it
   needs. */
#include <stddef.h>

/* What the parser reports, each with the `context` given at creation. `attributes` holds `attribute_count`
   groups of five pointers as libxml2's SAX2 gives them: local name, prefix, namespace URI, the value's first
   byte and the byte past its last (the value is not NUL-terminated). Names and URIs are NUL-terminated UTF-8. */
struct haul_xml_handlers {
    void (*start)(void *context, const char *name, const char *uri, int attribute_count, const char **attributes);
    void (*end)(void *context);
    void (*text)(void *context, const char *bytes, int length);
};

struct haul_xml_parser;

/* Loads libxml2 now: 0, or -1 with why not in `message` (at most `size` bytes, NUL-terminated). */
int haul_xml_load(char *message, size_t size);

/* A new parser, or NULL when libxml2 cannot be loaded or is out of memory. */
struct haul_xml_parser *haul_xml_parser_new(const struct haul_xml_handlers *handlers, void *context);

/* Feeds the next bytes (`last`: the document ends with them). 0 while the document is well-formed so far;
   -1 once it is not, or was refused, or `haul_xml_parser_stop` was called: the parser takes nothing more. */
int haul_xml_parser_feed(struct haul_xml_parser *parser, const char *bytes, int length, int last);

/* Stops the parse from inside a handler (a limit was reached): the current feed returns -1. */
void haul_xml_parser_stop(struct haul_xml_parser *parser);

/* Why the parse failed, one line (libxml2's message, or the refusal's), and its line in `line`; "" if none. */
const char *haul_xml_parser_error(struct haul_xml_parser *parser, int *line);

void haul_xml_parser_free(struct haul_xml_parser *parser);
#endif
