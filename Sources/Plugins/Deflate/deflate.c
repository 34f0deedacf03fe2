/* The "deflate" sample plugin: Binary <-> zlib-compressed Binary.
 *
 * Stored form: "AZ1" then the original length as 8 little-endian bytes, then
 * the zlib stream. Decoding checks the header, refuses lengths above the
 * configured limit before allocating, and requires the stream to inflate to
 * exactly the recorded length.
 *
 * Configuration: "level=N" (0-9, default 6) and/or "max=BYTES" (largest value
 * it will inflate, default 256 MiB), separated by commas. */
#include <amber_plugin.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct Settings {
    int level;
    uint64_t max;
} Settings;

static const unsigned char magic[3] = {'A', 'Z', '1'};
enum { HEADER = 11 };

static void release_buffer(amber_plugin_value *value) { free(value->release_context); }

static int32_t compress_value(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    const Settings *settings = state;
    if (input->type != AMBER_PLUGIN_VALUE_BINARY) return AMBER_PLUGIN_ERROR;
    uLong length = (uLong)input->v.bytes.length;
    uLong bound = compressBound(length);
    unsigned char *buffer = malloc(HEADER + bound);
    if (buffer == NULL) return AMBER_PLUGIN_ERROR;
    memcpy(buffer, magic, sizeof magic);
    for (int i = 0; i < 8; i++) buffer[3 + i] = (unsigned char)((uint64_t)length >> (8 * i));
    uLongf written = bound;
    const Bytef *source = length ? input->v.bytes.data : (const Bytef *)"";
    if (compress2(buffer + HEADER, &written, source, length, settings->level) != Z_OK) {
        free(buffer);
        return AMBER_PLUGIN_ERROR;
    }
    output->type = AMBER_PLUGIN_VALUE_BINARY;
    output->v.bytes.data = buffer;
    output->v.bytes.length = HEADER + written;
    output->release = release_buffer;
    output->release_context = buffer;
    return AMBER_PLUGIN_OK;
}

static int32_t decompress_value(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    const Settings *settings = state;
    if (input->type != AMBER_PLUGIN_VALUE_BINARY || input->v.bytes.length < HEADER) return AMBER_PLUGIN_ERROR;
    const unsigned char *in = input->v.bytes.data;
    if (memcmp(in, magic, sizeof magic) != 0) return AMBER_PLUGIN_ERROR;
    uint64_t length = 0;
    for (int i = 0; i < 8; i++) length |= (uint64_t)in[3 + i] << (8 * i);
    if (length > settings->max) return AMBER_PLUGIN_ERROR;
    unsigned char *buffer = malloc(length ? (size_t)length : 1);
    if (buffer == NULL) return AMBER_PLUGIN_ERROR;
    uLongf produced = (uLongf)length;
    int status = uncompress(buffer, &produced, in + HEADER, (uLong)(input->v.bytes.length - HEADER));
    if (status != Z_OK || produced != length) {
        free(buffer);
        return AMBER_PLUGIN_ERROR;
    }
    output->type = AMBER_PLUGIN_VALUE_BINARY;
    output->v.bytes.data = buffer;
    output->v.bytes.length = (size_t)length;
    output->release = release_buffer;
    output->release_context = buffer;
    return AMBER_PLUGIN_OK;
}

static int32_t create(void **state, const char *configuration, const amber_plugin_host *host) {
    Settings *settings = malloc(sizeof *settings);
    if (settings == NULL) return AMBER_PLUGIN_ERROR;
    settings->level = 6;
    settings->max = 256u << 20;
    const char *cursor = configuration;
    while (cursor != NULL && *cursor != '\0') {
        int level;
        unsigned long long max;
        if (sscanf(cursor, "level=%d", &level) == 1 && level >= 0 && level <= 9) {
            settings->level = level;
        } else if (sscanf(cursor, "max=%llu", &max) == 1) {
            settings->max = max;
        } else if (strncmp(cursor, "key=", 4) != 0) { /* another plugin's setting in a shared string */
            host->report_error(host, "deflate: configuration understood: level=0..9, max=BYTES");
            free(settings);
            return AMBER_PLUGIN_ERROR;
        }
        cursor = strchr(cursor, ',');
        if (cursor != NULL) cursor++;
    }
    *state = settings;
    return AMBER_PLUGIN_OK;
}

static void destroy(void *state) { free(state); }

static const amber_plugin_transformer transformers[] = {
    {"Deflate", "Binary", "Binary", AMBER_PLUGIN_REVERSIBLE | AMBER_PLUGIN_THREAD_SAFE, compress_value, decompress_value,
     create, destroy},
};

static const amber_plugin_descriptor descriptor = {
    sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "deflate", "1.0.0",
    sizeof(amber_plugin_class), 0, NULL,
    sizeof(amber_plugin_transformer), 1, transformers,
    AMBER_PLUGIN_ABI_MINOR,
};

const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) {
    (void)host;
    return &descriptor;
}
