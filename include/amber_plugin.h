/*
 * amber_plugin.h — the plugin ABI of Amber: value transformers (and the value
 * classes they convert) in a shared library loaded at run time.
 *
 * A plugin includes only this header and never links libamber. It exports
 * exactly one function, amber_plugin_entry, which returns a static
 * descriptor of what it provides. The host (libamber, or any program using
 * Amber) loads it only when the program names the file or its directory:
 * model data never loads code.
 *
 * LOADING. The host refuses a plugin file that is writable by group or
 * others, opens it with dlopen(RTLD_NOW | RTLD_LOCAL), calls
 * amber_plugin_entry once, then checks everything: the ABI version, each
 * struct size, every string (non-NULL, valid UTF-8, a proper name), every
 * function pointer, that each struct class's sizeof (as the plugin's
 * compiler saw it) equals the host's libffi layout, that every class a
 * transformer names exists, that no name is taken. Any problem refuses the
 * whole plugin and nothing of it is registered; the error names the file,
 * the class or transformer, and what was expected against what was found.
 * A loaded plugin stays loaded for the life of the process.
 *
 * THREADS. amber_plugin_entry, create and destroy run on the thread that
 * loads the plugin or releases the transformer. forward and reverse run on
 * the thread of the context reading or saving; unless a transformer sets
 * AMBER_PLUGIN_THREAD_SAFE, the host never runs two calls of the same
 * transformer at once, and copies and releases each result before the next
 * call starts (so a result may live in the transformer's state).
 * report_error belongs to the thread that calls it: a message reported during
 * a forward or reverse that then fails is put in that call's error.
 *
 * OWNERSHIP. Everything the descriptor points to must stay valid and
 * unchanged while the plugin is loaded (static data is the usual choice).
 * Values passed to forward/reverse are borrowed for the call. Values a
 * plugin returns carry their own release function, which the host calls
 * exactly once after the call returns, whatever happened: after copying a
 * result it accepts, and also when the call returned an error or the host
 * refused the result (another class or size, a null value for a non-null
 * input). The host zeroes the output before each call, so a release the
 * plugin did not set is never called (NULL: nothing to release); a plugin
 * that frees its result itself before failing leaves it NULL.
 */
#ifndef AMBER_PLUGIN_H
#define AMBER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The plugin ABI version this header describes. A host loads plugins whose
 *  abi_version equals its own; it refuses newer ones, naming both versions. */
#define AMBER_PLUGIN_ABI_VERSION 1

/** The minor version of the plugin ABI this header describes: raised when
 *  optional fields are added at the end of a struct that carries its own
 *  size. A plugin sets amber_plugin_descriptor.abi_minor to it; a host reads
 *  the fields of minor N only from plugins that declare at least N, and a
 *  plugin compiled before a field existed keeps loading.
 *    0: the first published ABI.
 *    1: amber_plugin_descriptor.abi_minor.
 *    2: amber_plugin_transformer.forward_bytes and reverse_bytes. */
#define AMBER_PLUGIN_ABI_MINOR 2

/** Value types of amber_plugin_value (the same numbers as amber.h's AMBER_VALUE_*). */
enum {
    AMBER_PLUGIN_VALUE_NULL = 0,
    AMBER_PLUGIN_VALUE_BOOL = 1,    /**< v.integer: 0 or 1 */
    AMBER_PLUGIN_VALUE_INT = 2,     /**< v.integer */
    AMBER_PLUGIN_VALUE_DOUBLE = 3,  /**< v.real */
    AMBER_PLUGIN_VALUE_FLOAT = 4,   /**< v.real (host converts to and from float) */
    AMBER_PLUGIN_VALUE_STRING = 5,  /**< v.bytes: UTF-8, not NUL-terminated */
    AMBER_PLUGIN_VALUE_BINARY = 6,  /**< v.bytes */
    AMBER_PLUGIN_VALUE_DATE = 7,    /**< v.real: seconds since 1970-01-01 UTC */
    AMBER_PLUGIN_VALUE_DECIMAL = 8, /**< v.bytes: decimal text */
    AMBER_PLUGIN_VALUE_UUID = 9,    /**< v.bytes: 16 bytes */
    AMBER_PLUGIN_VALUE_URI = 10,    /**< v.bytes: UTF-8 */
    AMBER_PLUGIN_VALUE_CUSTOM = 12  /**< v.bytes: a value of the transformer's custom input or output class */
};

/** A value crossing the plugin boundary. */
typedef struct amber_plugin_value {
    int32_t type; /**< an AMBER_PLUGIN_VALUE_* constant */
    union {
        int64_t integer;
        double real;
        struct {
            const void *data;
            size_t length;
        } bytes;
    } v;
    /** Set by the plugin on results it returns: called exactly once by the
     *  host after the call, success or failure (see OWNERSHIP; NULL: nothing
     *  to release). Ignored on inputs. */
    void (*release)(struct amber_plugin_value *value);
    /** Free for the plugin's use in release (for example the buffer to free). */
    void *release_context;
} amber_plugin_value;

/** Log levels of amber_plugin_host.log. */
enum { AMBER_PLUGIN_LOG_DEBUG = 0, AMBER_PLUGIN_LOG_INFO = 1, AMBER_PLUGIN_LOG_WARNING = 2, AMBER_PLUGIN_LOG_ERROR = 3 };

/** What the host offers the plugin. Read struct_size before any field added
 *  after abi_version 1. Valid during amber_plugin_entry and create; a plugin
 *  may keep the pointer for the life of the process. */
typedef struct amber_plugin_host {
    uint32_t struct_size; /**< sizeof(amber_plugin_host) in the host */
    uint32_t abi_version; /**< the host's AMBER_PLUGIN_ABI_VERSION */
    /** Writes `message` (NUL-terminated UTF-8) to the host's log, tagged with the plugin's file. */
    void (*log)(const struct amber_plugin_host *host, int32_t level, const char *message);
    /** Explains a refusal: call it before returning NULL from amber_plugin_entry
     *  or an error from create, and the host puts `message` in its load error. */
    void (*report_error)(const struct amber_plugin_host *host, const char *message);
    /** The host's own data; do not touch. */
    void *host_data;
} amber_plugin_host;

/** C scalar types of struct fields (the same numbers as amber.h's AMBER_FIELD_*). */
enum {
    AMBER_PLUGIN_FIELD_INT8 = 1, AMBER_PLUGIN_FIELD_INT16, AMBER_PLUGIN_FIELD_INT32, AMBER_PLUGIN_FIELD_INT64,
    AMBER_PLUGIN_FIELD_UINT8, AMBER_PLUGIN_FIELD_UINT16, AMBER_PLUGIN_FIELD_UINT32, AMBER_PLUGIN_FIELD_UINT64,
    AMBER_PLUGIN_FIELD_FLOAT, AMBER_PLUGIN_FIELD_DOUBLE, AMBER_PLUGIN_FIELD_BOOL,
    AMBER_PLUGIN_FIELD_STRUCT /**< a nested struct class named by struct_name, declared earlier */
};

/** One field of a struct class. */
typedef struct amber_plugin_field {
    const char *name;
    int32_t type;            /**< an AMBER_PLUGIN_FIELD_* constant */
    const char *struct_name; /**< AMBER_PLUGIN_FIELD_STRUCT only; else NULL */
} amber_plugin_field;

/** Kinds of value class. */
enum { AMBER_PLUGIN_CLASS_STRUCT = 1, AMBER_PLUGIN_CLASS_OPAQUE = 2 };

/** A value class the plugin defines. */
typedef struct amber_plugin_class {
    const char *name;
    int32_t kind;                     /**< AMBER_PLUGIN_CLASS_STRUCT or _OPAQUE */
    const amber_plugin_field *fields; /**< struct: its fields in order */
    size_t field_count;
    /** Struct: sizeof the struct as the plugin was compiled (the host refuses the
     *  plugin if its own layout differs). Opaque: the fixed size, or 0 for any. */
    size_t size;
} amber_plugin_class;

/** Flags of amber_plugin_transformer. */
enum {
    AMBER_PLUGIN_REVERSIBLE = 1,  /**< reverse is set; required to store values */
    AMBER_PLUGIN_THREAD_SAFE = 2  /**< forward and reverse may run on several threads at once */
};

/** Status codes a plugin's functions return (any other negative value is an error too). */
enum { AMBER_PLUGIN_OK = 0, AMBER_PLUGIN_ERROR = -1 };

/** A transformer the plugin provides. */
typedef struct amber_plugin_transformer {
    const char *name;         /**< unique among every transformer the host knows */
    const char *input_class;  /**< a built-in class ("Binary", "String", "Integer", "Double", …) or a declared one */
    const char *output_class;
    uint32_t flags;           /**< AMBER_PLUGIN_* flags, or-ed */
    /** Converts `*input` (borrowed) into `*output` (initially NULL-typed, with
     *  release NULL). Returns AMBER_PLUGIN_OK or a negative code. The host checks
     *  the result's type and size against output_class on every call, and
     *  refuses a NULL result for a non-NULL input (the value would be lost). */
    int32_t (*forward)(void *state, const amber_plugin_value *input, amber_plugin_value *output);
    /** The inverse of forward; required with AMBER_PLUGIN_REVERSIBLE, else NULL. */
    int32_t (*reverse)(void *state, const amber_plugin_value *input, amber_plugin_value *output);
    /** Optional: makes the transformer's state from the configuration string the
     *  program gave at load (NULL if none). Return AMBER_PLUGIN_OK and set
     *  *state, or an error (after host->report_error) to refuse the plugin. */
    int32_t (*create)(void **state, const char *configuration, const amber_plugin_host *host);
    /** Optional: frees what create made, once, when nothing uses the transformer any more.
     *  Called only for transformers whose create succeeded (never without create). */
    void (*destroy)(void *state);
    /* Minor 2 and later. */
    /** Optional fast path between byte forms (a struct or opaque class, or
     *  "Binary"): forward on raw bytes into a buffer the host provides, with no
     *  amber_plugin_value and no allocation. `input` holds `input_length`
     *  bytes (the input class's size when it has one); write at most
     *  `output_capacity` bytes to `output` and set *output_length. Return
     *  AMBER_PLUGIN_OK, or an error (report_error first to explain it), also
     *  when the output would not fit. The host still checks the length
     *  against the output class on every call. NULL: the host converts
     *  through `forward`. */
    int32_t (*forward_bytes)(void *state, const void *input, size_t input_length, void *output, size_t output_capacity,
                             size_t *output_length);
    /** The same for reverse; only with AMBER_PLUGIN_REVERSIBLE. */
    int32_t (*reverse_bytes)(void *state, const void *input, size_t input_length, void *output, size_t output_capacity,
                             size_t *output_length);
} amber_plugin_transformer;

/** What amber_plugin_entry returns. */
typedef struct amber_plugin_descriptor {
    uint32_t struct_size;             /**< sizeof(amber_plugin_descriptor) as the plugin was compiled */
    uint32_t abi_version;             /**< AMBER_PLUGIN_ABI_VERSION as the plugin was compiled */
    const char *name;                 /**< the plugin's name, e.g. "color" */
    const char *version;              /**< the plugin's own version, e.g. "1.0.0" */
    uint32_t class_struct_size;       /**< sizeof(amber_plugin_class): the stride of `classes` */
    size_t class_count;
    const amber_plugin_class *classes;
    uint32_t transformer_struct_size; /**< sizeof(amber_plugin_transformer): the stride of `transformers` */
    size_t transformer_count;
    const amber_plugin_transformer *transformers;
    /* Minor 1 and later. */
    uint32_t abi_minor;               /**< AMBER_PLUGIN_ABI_MINOR as the plugin was compiled */
} amber_plugin_descriptor;

/** The one function a plugin exports. Returns the plugin's static descriptor,
 *  or NULL to refuse loading (after host->report_error). */
const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host);

/** The type of amber_plugin_entry, for hosts that look it up with dlsym. */
typedef const amber_plugin_descriptor *(*amber_plugin_entry_fn)(const amber_plugin_host *host);

#ifdef __cplusplus
}
#endif

#endif /* AMBER_PLUGIN_H */
