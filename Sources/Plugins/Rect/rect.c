/* The "rect" sample plugin: struct Rect { double x, y, w, h; } <-> the string
 * "{{x, y}, {w, h}}" (the NSStringFromRect form), readable in SQL. Numbers are
 * written with 17 significant digits, so every double reads back exactly. */
#include <amber_plugin.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Rect {
    double x, y, w, h;
} Rect;

/* Results point into this per-thread buffer; the host copies them before the
 * next call on the thread. Four %.17g numbers and the punctuation fit easily. */
static _Thread_local char text[160];
static _Thread_local Rect rect_result;

static int32_t rect_to_string(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state;
    if (input->type != AMBER_PLUGIN_VALUE_CUSTOM || input->v.bytes.length != sizeof(Rect)) return AMBER_PLUGIN_ERROR;
    Rect r;
    memcpy(&r, input->v.bytes.data, sizeof r);
    int length = snprintf(text, sizeof text, "{{%.17g, %.17g}, {%.17g, %.17g}}", r.x, r.y, r.w, r.h);
    if (length < 0 || (size_t)length >= sizeof text) return AMBER_PLUGIN_ERROR;
    output->type = AMBER_PLUGIN_VALUE_STRING;
    output->v.bytes.data = text;
    output->v.bytes.length = (size_t)length;
    return AMBER_PLUGIN_OK;
}

/* Reads a number at *cursor, then expects `after` (skipping spaces); 0 on failure. */
static int number(const char **cursor, const char *end, double *out, char after) {
    char *stop;
    errno = 0;
    *out = strtod(*cursor, &stop);
    if (stop == *cursor || errno == ERANGE || stop >= end) return 0;
    while (stop < end && *stop == ' ') stop++;
    if (stop >= end || *stop != after) return 0;
    *cursor = stop + 1;
    while (*cursor < end && **cursor == ' ') (*cursor)++;
    return 1;
}

static int32_t string_to_rect(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state;
    if (input->type != AMBER_PLUGIN_VALUE_STRING || input->v.bytes.length >= sizeof text) return AMBER_PLUGIN_ERROR;
    /* A NUL-terminated copy, so strtod cannot read past the value. */
    memcpy(text, input->v.bytes.data, input->v.bytes.length);
    text[input->v.bytes.length] = '\0';
    const char *cursor = text, *end = text + input->v.bytes.length;
    Rect r;
    if (strncmp(cursor, "{{", 2) != 0) return AMBER_PLUGIN_ERROR;
    cursor += 2;
    if (!number(&cursor, end, &r.x, ',') || !number(&cursor, end, &r.y, '}')) return AMBER_PLUGIN_ERROR;
    if (cursor >= end || *cursor != ',') return AMBER_PLUGIN_ERROR;
    cursor++;
    while (cursor < end && *cursor == ' ') cursor++;
    if (cursor >= end || *cursor != '{') return AMBER_PLUGIN_ERROR;
    cursor++;
    if (!number(&cursor, end, &r.w, ',') || !number(&cursor, end, &r.h, '}')) return AMBER_PLUGIN_ERROR;
    if (cursor + 1 != end || *cursor != '}') return AMBER_PLUGIN_ERROR;
    rect_result = r;
    output->type = AMBER_PLUGIN_VALUE_CUSTOM;
    output->v.bytes.data = &rect_result;
    output->v.bytes.length = sizeof rect_result;
    return AMBER_PLUGIN_OK;
}

static const amber_plugin_field rect_fields[] = {
    {"x", AMBER_PLUGIN_FIELD_DOUBLE, NULL},
    {"y", AMBER_PLUGIN_FIELD_DOUBLE, NULL},
    {"w", AMBER_PLUGIN_FIELD_DOUBLE, NULL},
    {"h", AMBER_PLUGIN_FIELD_DOUBLE, NULL},
};

static const amber_plugin_class classes[] = {
    {"Rect", AMBER_PLUGIN_CLASS_STRUCT, rect_fields, 4, sizeof(Rect)},
};

static const amber_plugin_transformer transformers[] = {
    {"RectToString", "Rect", "String", AMBER_PLUGIN_REVERSIBLE | AMBER_PLUGIN_THREAD_SAFE, rect_to_string,
     string_to_rect, NULL, NULL},
};

static const amber_plugin_descriptor descriptor = {
    sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "rect", "1.0.0",
    sizeof(amber_plugin_class), 1, classes,
    sizeof(amber_plugin_transformer), 1, transformers,
    AMBER_PLUGIN_ABI_MINOR,
};

const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) {
    (void)host;
    return &descriptor;
}
