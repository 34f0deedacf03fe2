/* A few lines of test scaffolding shared by the C API tests. */
#ifndef AMBER_TEST_CHECK_H
#define AMBER_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (cond) {                                                                   \
            passed++;                                                                 \
        } else {                                                                      \
            failed++;                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n  last error %d: %s\n", __FILE__, __LINE__, #cond, \
                    amber_last_error_code(), amber_last_error_message());             \
        }                                                                             \
    } while (0)

/* A call expected to succeed. */
#define OK(call) CHECK((call) == AMBER_OK)

/* A call expected to fail with `code`, leaving a last error whose message contains `text`. */
#define FAILS(call, code, text)                                                       \
    do {                                                                              \
        amber_status status_ = (call);                                                \
        CHECK(status_ == (code));                                                     \
        CHECK(amber_last_error_code() == (code));                                     \
        CHECK(strstr(amber_last_error_message(), (text)) != NULL);                    \
    } while (0)

/* Values to pass in: a borrowed string, an integer. */
static inline amber_value text(const char *s) {
    amber_value value = {.type = AMBER_VALUE_STRING};
    value.v.text.data = s;
    value.v.text.length = strlen(s);
    return value;
}

static inline amber_value integer(int64_t n) {
    amber_value value = {.type = AMBER_VALUE_INT};
    value.v.integer = n;
    return value;
}

/* Adds attribute `name` of `type` (an AMBER_TYPE_* constant) to `entity` of `builder`. */
static inline void add_attribute(amber_model_builder *builder, const char *entity, const char *name, int32_t type) {
    amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = name;
    spec.type = type;
    OK(amber_model_builder_add_attribute(builder, entity, &spec));
}

static int report(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

#endif
