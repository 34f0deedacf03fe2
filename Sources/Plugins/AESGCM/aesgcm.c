/* The "aesgcm" sample plugin: Binary or String <-> AES-256-GCM sealed Binary
 * (OpenSSL libcrypto).
 *
 * Sealed form: version byte 1, a random 12-byte nonce, the ciphertext, the
 * 16-byte tag. Opening checks the tag, so a wrong key or a changed byte is an
 * error, never garbage.
 *
 * Configuration: "key=<64 hex digits>" (the 32-byte key), required. Other
 * comma-separated settings are ignored, so one string can configure several
 * plugins. */
#include <amber_plugin.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

enum { KEY = 32, NONCE = 12, TAG = 16, OVERHEAD = 1 + NONCE + TAG };

typedef struct Key {
    unsigned char bytes[KEY];
} Key;

static void release_buffer(amber_plugin_value *value) { free(value->release_context); }

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int32_t create(void **state, const char *configuration, const amber_plugin_host *host) {
    const char *hex = configuration ? strstr(configuration, "key=") : NULL;
    if (hex == NULL) {
        host->report_error(host, "aesgcm: configuration needs key=<64 hex digits>");
        return AMBER_PLUGIN_ERROR;
    }
    hex += 4;
    Key *key = malloc(sizeof *key);
    if (key == NULL) return AMBER_PLUGIN_ERROR;
    for (int i = 0; i < KEY; i++) {
        int high = hex_digit(hex[2 * i]), low = high < 0 ? -1 : hex_digit(hex[2 * i + 1]);
        if (high < 0 || low < 0) {
            host->report_error(host, "aesgcm: key must be 64 hex digits (32 bytes)");
            free(key);
            return AMBER_PLUGIN_ERROR;
        }
        key->bytes[i] = (unsigned char)(high * 16 + low);
    }
    if (hex[2 * KEY] != '\0' && hex[2 * KEY] != ',') {
        host->report_error(host, "aesgcm: key must be 64 hex digits (32 bytes)");
        free(key);
        return AMBER_PLUGIN_ERROR;
    }
    *state = key;
    return AMBER_PLUGIN_OK;
}

static void destroy(void *state) {
    if (state != NULL) OPENSSL_cleanse(state, sizeof(Key));
    free(state);
}

static int32_t seal(const Key *key, const unsigned char *plain, size_t length, amber_plugin_value *output) {
    if (length > (size_t)INT32_MAX - OVERHEAD) return AMBER_PLUGIN_ERROR;
    unsigned char *out = malloc(length + OVERHEAD);
    if (out == NULL) return AMBER_PLUGIN_ERROR;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = ctx != NULL;
    int written = 0, final = 0;
    out[0] = 1;
    ok = ok && RAND_bytes(out + 1, NONCE) == 1;
    ok = ok && EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE, NULL) == 1;
    ok = ok && EVP_EncryptInit_ex(ctx, NULL, NULL, key->bytes, out + 1) == 1;
    ok = ok && EVP_EncryptUpdate(ctx, out + 1 + NONCE, &written, plain, (int)length) == 1;
    ok = ok && EVP_EncryptFinal_ex(ctx, out + 1 + NONCE + written, &final) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, out + 1 + NONCE + written + final) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        free(out);
        return AMBER_PLUGIN_ERROR;
    }
    output->type = AMBER_PLUGIN_VALUE_BINARY;
    output->v.bytes.data = out;
    output->v.bytes.length = length + OVERHEAD;
    output->release = release_buffer;
    output->release_context = out;
    return AMBER_PLUGIN_OK;
}

/* Opens a sealed value into `type` (BINARY or STRING); a bad tag is an error. */
static int32_t open_sealed(const Key *key, const amber_plugin_value *input, int32_t type, amber_plugin_value *output) {
    if (input->type != AMBER_PLUGIN_VALUE_BINARY || input->v.bytes.length < OVERHEAD) return AMBER_PLUGIN_ERROR;
    const unsigned char *in = input->v.bytes.data;
    if (in[0] != 1) return AMBER_PLUGIN_ERROR;
    size_t length = input->v.bytes.length - OVERHEAD;
    unsigned char *out = malloc(length ? length : 1);
    if (out == NULL) return AMBER_PLUGIN_ERROR;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = ctx != NULL;
    int written = 0, final = 0;
    ok = ok && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE, NULL) == 1;
    ok = ok && EVP_DecryptInit_ex(ctx, NULL, NULL, key->bytes, in + 1) == 1;
    ok = ok && EVP_DecryptUpdate(ctx, out, &written, in + 1 + NONCE, (int)length) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, (void *)(in + 1 + NONCE + length)) == 1;
    ok = ok && EVP_DecryptFinal_ex(ctx, out + written, &final) == 1; /* fails on a wrong key or tampered bytes */
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        free(out);
        return AMBER_PLUGIN_ERROR;
    }
    output->type = type;
    output->v.bytes.data = out;
    output->v.bytes.length = length;
    output->release = release_buffer;
    output->release_context = out;
    return AMBER_PLUGIN_OK;
}

static int32_t seal_binary(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    if (input->type != AMBER_PLUGIN_VALUE_BINARY) return AMBER_PLUGIN_ERROR;
    return seal(state, input->v.bytes.data, input->v.bytes.length, output);
}

static int32_t seal_string(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    if (input->type != AMBER_PLUGIN_VALUE_STRING) return AMBER_PLUGIN_ERROR;
    return seal(state, input->v.bytes.data, input->v.bytes.length, output);
}

static int32_t open_binary(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    return open_sealed(state, input, AMBER_PLUGIN_VALUE_BINARY, output);
}

static int32_t open_string(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    return open_sealed(state, input, AMBER_PLUGIN_VALUE_STRING, output);
}

static const amber_plugin_transformer transformers[] = {
    {"AESGCM", "Binary", "Binary", AMBER_PLUGIN_REVERSIBLE | AMBER_PLUGIN_THREAD_SAFE, seal_binary, open_binary, create,
     destroy},
    {"AESGCMString", "String", "Binary", AMBER_PLUGIN_REVERSIBLE | AMBER_PLUGIN_THREAD_SAFE, seal_string, open_string,
     create, destroy},
};

static const amber_plugin_descriptor descriptor = {
    sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "aesgcm", "1.0.0",
    sizeof(amber_plugin_class), 0, NULL,
    sizeof(amber_plugin_transformer), 2, transformers,
    AMBER_PLUGIN_ABI_MINOR,
};

const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) {
    (void)host;
    return &descriptor;
}
