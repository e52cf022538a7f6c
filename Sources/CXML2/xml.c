/* libxml2's SAX2 push parser for untrusted XML (include/shim.h). libxml2 is loaded when first used
   (CLoadOnUse): its callbacks stay on this side, each forwarding to the handlers the caller gave. */
#include "shim.h"
#include "load_on_use.h"
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XML_FUNCTIONS(X) \
    X(void, xmlInitParser, (void), ()) \
    X(xmlParserCtxtPtr, xmlCreatePushParserCtxt, (xmlSAXHandlerPtr sax, void *user_data, const char *chunk, int size, \
      const char *filename), (sax, user_data, chunk, size, filename)) \
    X(int, xmlCtxtUseOptions, (xmlParserCtxtPtr ctxt, int options), (ctxt, options)) \
    X(int, xmlParseChunk, (xmlParserCtxtPtr ctxt, const char *chunk, int size, int terminate), \
      (ctxt, chunk, size, terminate)) \
    X(void, xmlStopParser, (xmlParserCtxtPtr ctxt), (ctxt)) \
    X(void, xmlFreeParserCtxt, (xmlParserCtxtPtr ctxt), (ctxt))

HAUL_LIBRARY(xml, "libxml2.so.2", XML_FUNCTIONS)
#define FORWARD(type, name, parameters, arguments) HAUL_FORWARD(xml, type, name, parameters, arguments)
XML_FUNCTIONS(FORWARD)
#undef FORWARD

int haul_xml_load(char *message, size_t size) { return haul_library_load(&xml, message, size); }

struct haul_xml_parser {
    xmlSAXHandler sax;
    xmlParserCtxtPtr context;
    struct haul_xml_handlers handlers;
    void *handler_context;
    /* Set when this side refused the document (an entity declared): libxml2's message would not say why. */
    char refusal[160];
    int refusal_line;
    int stopped;
};

static void haul_xml_start(void *user, const xmlChar *name, const xmlChar *prefix, const xmlChar *uri,
                           int namespace_count, const xmlChar **namespaces, int attribute_count, int defaulted_count,
                           const xmlChar **attributes) {
    (void)prefix;
    (void)namespace_count;
    (void)namespaces;
    (void)defaulted_count;
    struct haul_xml_parser *parser = user;
    if (parser->stopped) return;
    parser->handlers.start(parser->handler_context, (const char *)name, (const char *)uri, attribute_count,
                           (const char **)attributes);
}

static void haul_xml_end(void *user, const xmlChar *name, const xmlChar *prefix, const xmlChar *uri) {
    (void)name;
    (void)prefix;
    (void)uri;
    struct haul_xml_parser *parser = user;
    if (parser->stopped) return;
    parser->handlers.end(parser->handler_context);
}

static void haul_xml_text(void *user, const xmlChar *bytes, int length) {
    struct haul_xml_parser *parser = user;
    if (parser->stopped) return;
    parser->handlers.text(parser->handler_context, (const char *)bytes, length);
}

/* Any entity declared in the document's DTD (internal subset) stops the parse there: a metalink has no use
   for one, and an entity is how a document reads a local file (XXE) or grows without bound. */
static void haul_xml_entity(void *user, const xmlChar *name, int type, const xmlChar *public_id,
                            const xmlChar *system_id, xmlChar *content) {
    (void)type;
    (void)public_id;
    (void)system_id;
    (void)content;
    struct haul_xml_parser *parser = user;
    if (!parser->stopped) {
        snprintf(parser->refusal, sizeof parser->refusal, "declares the entity '%.60s' (entities are refused)",
                 (const char *)name);
        parser->refusal_line = parser->context->input != NULL ? parser->context->input->line : 0;
    }
    haul_xml_parser_stop(parser);
}

/* libxml2 keeps each error in the context (`lastError`), which is what `haul_xml_parser_error` reads: this
   handler only keeps it off stderr. */
static void haul_xml_quiet(void *user, xmlErrorPtr error) {
    (void)user;
    (void)error;
}

static pthread_once_t initialized = PTHREAD_ONCE_INIT;

/* libxml2's global state, set up once before any parser (its own guard is not thread-safe in 2.9). */
static void haul_xml_initialize(void) { xmlInitParser(); }

struct haul_xml_parser *haul_xml_parser_new(const struct haul_xml_handlers *handlers, void *context) {
    if (haul_library_load(&xml, NULL, 0) != 0) return NULL;
    pthread_once(&initialized, haul_xml_initialize);
    struct haul_xml_parser *parser = calloc(1, sizeof *parser);
    if (parser == NULL) return NULL;
    parser->handlers = *handlers;
    parser->handler_context = context;
    /* Only what is set here is called: no resolver (resolveEntity, externalSubset), no getEntity (a reference
       to anything but the five predefined entities is an error), nothing that builds a tree. */
    parser->sax.initialized = XML_SAX2_MAGIC;
    parser->sax.startElementNs = haul_xml_start;
    parser->sax.endElementNs = haul_xml_end;
    parser->sax.characters = haul_xml_text;
    parser->sax.cdataBlock = haul_xml_text;
    parser->sax.entityDecl = haul_xml_entity;
    parser->sax.serror = haul_xml_quiet;
    parser->context = xmlCreatePushParserCtxt(&parser->sax, parser, NULL, 0, NULL);
    if (parser->context == NULL) {
        free(parser);
        return NULL;
    }
    /* XML_PARSE_NONET, and none of NOENT, DTDLOAD, DTDATTR, DTDVALID, XINCLUDE or HUGE. */
    xmlCtxtUseOptions(parser->context, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    return parser;
}

int haul_xml_parser_feed(struct haul_xml_parser *parser, const char *bytes, int length, int last) {
    if (parser->stopped) return -1;
    int status = xmlParseChunk(parser->context, bytes, length, last);
    if (parser->stopped || status != 0 || parser->context->wellFormed == 0) return -1;
    return 0;
}

void haul_xml_parser_stop(struct haul_xml_parser *parser) {
    if (parser->stopped) return;
    parser->stopped = 1;
    xmlStopParser(parser->context);
}

const char *haul_xml_parser_error(struct haul_xml_parser *parser, int *line) {
    if (parser->refusal[0] != 0) {
        *line = parser->refusal_line;
        return parser->refusal;
    }
    const xmlError *error = &parser->context->lastError;
    *line = error->line;
    return error->message != NULL ? error->message : "";
}

void haul_xml_parser_free(struct haul_xml_parser *parser) {
    if (parser == NULL) return;
    xmlFreeParserCtxt(parser->context);
    free(parser);
}
