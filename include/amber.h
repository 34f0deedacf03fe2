/*
 * amber.h — the C API of Amber, an object store with typed, checked value
 * transformers over SQLite.
 *
 * This header is the contract for every non-Swift caller (C, C++, and any
 * language with a C FFI). It is hand-written C11; the Swift implementation is
 * checked against it by the compiler (`@c @implementation`), and a test
 * checks that the library exports exactly the functions declared here.
 *
 * CONVENTIONS (they hold for every function unless its comment says otherwise)
 *
 *   Status.   Functions that can fail return amber_status: AMBER_OK (0) on
 *             success, a negative AMBER_E_* code on failure. On failure the
 *             out-parameters are left untouched and the thread's last error
 *             (amber_last_error_code / _message / _origin) describes what
 *             went wrong. Nothing the caller owns is ever freed on failure.
 *
 *   Outputs.  Results are written through pointers, the out-parameter first.
 *
 *   Handles.  Every amber_* object type is an opaque handle. A handle carries
 *             a magic cookie, its type and a generation, so a NULL, released
 *             ("stale"), forged or wrong-type handle is reported as
 *             AMBER_E_NULL_ARGUMENT, AMBER_E_INVALID_HANDLE or
 *             AMBER_E_WRONG_HANDLE_TYPE: never dereferenced, never a crash.
 *
 *   Threads.  Registries, models, entity and attribute handles may be used
 *             from any thread. A context, and the object handles it gives
 *             out, belong to the thread that created the context; use from
 *             another thread fails with AMBER_E_WRONG_THREAD, except that
 *             once that thread has ended, any thread may free them
 *             (amber_context_free, amber_batch_free, amber_changes_free,
 *             amber_live_query_free). A store may be
 *             shared by contexts on any threads: it runs one caller's
 *             statements at a time. Several stores, in this process or
 *             others, may open one file; a save that meets another writer
 *             waits up to the busy timeout (amber_store_options), then fails
 *             with AMBER_E_BUSY.
 *
 *   Strings.  Names (entities, attributes, classes, transformers, paths) are
 *             NUL-terminated UTF-8. String values carry a length and need no
 *             NUL. Invalid UTF-8 is refused with AMBER_E_INVALID_UTF8.
 *             Strings the library returns are NUL-terminated and UTF-8.
 *
 *   Memory.   Input pointers are borrowed for the duration of the call only:
 *             the library copies what it keeps. Memory the library returns
 *             to the caller is released with amber_free() (buffers, arrays)
 *             or amber_value_release() (the contents of an amber_value),
 *             as each function states.
 */
#ifndef AMBER_H
#define AMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                 */
/* ------------------------------------------------------------------------ */

/** Version of the C ABI. Raised only when an existing declaration changes
 *  incompatibly (1: caller-filled structs gained their leading `size`
 *  field). Structs that may grow carry a `size` the caller sets through
 *  their AMBER_..._INIT initializer; the library reads only that many bytes,
 *  so a program built against an older header keeps working with a newer
 *  library. */
#define AMBER_ABI_VERSION 1

/** The library version as a string "MAJOR.MINOR.PATCH".
 *
 *  Returns a pointer to a static, NUL-terminated string owned by the library;
 *  it is valid for the life of the process and must not be freed. Never fails
 *  and never returns NULL. Safe to call from any thread. */
const char *amber_version(void);

/** The C ABI version the loaded library implements; compare it with
 *  AMBER_ABI_VERSION to detect a header/library mismatch. Never fails; safe
 *  to call from any thread. */
int32_t amber_abi_version(void);

/* ------------------------------------------------------------------------ */
/* Status codes and the last error                                          */
/* ------------------------------------------------------------------------ */

/** 0 on success, a negative AMBER_E_* code on failure. */
typedef int32_t amber_status;

enum {
    AMBER_OK = 0,
    AMBER_E_NULL_ARGUMENT = -1,      /**< a required pointer argument was NULL */
    AMBER_E_INVALID_HANDLE = -2,     /**< not a live Amber handle: released, forged or corrupt */
    AMBER_E_WRONG_HANDLE_TYPE = -3,  /**< a live handle of another type (a context where an object was expected) */
    AMBER_E_WRONG_THREAD = -4,       /**< a context or object used from a thread other than its context's */
    AMBER_E_INVALID_UTF8 = -5,       /**< a name or string value is not valid UTF-8 */
    AMBER_E_NOT_FOUND = -6,          /**< no entity, attribute, class, transformer or object of that name or ID (in a predicate, the origin is "position N") */
    AMBER_E_INVALID_VALUE = -7,      /**< a value of the wrong class, size or range; a malformed amber_value */
    AMBER_E_INVALID_MODEL = -8,      /**< the model failed to bind; the message lists every problem */
    AMBER_E_INVALID_JSON = -9,       /**< a model file is malformed; the origin is the JSON path */
    AMBER_E_INVALID_PREDICATE = -10, /**< predicate text failed to parse or compile; the message has the position */
    AMBER_E_SAVE_FAILED = -11,       /**< a save failed: nothing written, every pending change kept */
    AMBER_E_MODEL_MISMATCH = -12,    /**< the store was made with a differently shaped model */
    AMBER_E_NOT_A_STORE = -13,       /**< the file is missing, not SQLite, or not an Amber store */
    AMBER_E_TRANSFORMER = -14,       /**< a transformer failed or returned a value other than it declared */
    AMBER_E_DUPLICATE = -15,         /**< a value class or transformer name is already registered */
    AMBER_E_INVALID_DECLARATION = -16, /**< a malformed value class or transformer declaration */
    AMBER_E_UNAVAILABLE = -17,       /**< the object was deleted or belongs to no context */
    AMBER_E_SQLITE = -18,            /**< SQLite reported an error */
    AMBER_E_BUFFER_TOO_SMALL = -19,  /**< a caller-provided array is too small; see the function */
    AMBER_E_PLUGIN_REFUSED = -20,    /**< a plugin was refused; nothing of it was registered */
    AMBER_E_BUSY = -21,              /**< another connection held the store's lock past the busy timeout: nothing written, pending changes kept; retrying may succeed */
    AMBER_E_OBSERVER = -22,          /**< an observer or live query callback failed: what the call did is done (a save is written); the message lists each failure */
    AMBER_E_MIGRATION_FAILED = -23,  /**< migrating a store to another model was refused or failed: the store is unchanged; the message lists every problem */
    AMBER_E_EXISTS = -24,            /**< a file is already at a path where only a new file is written (a backup's destination): nothing written */
    AMBER_E_INVALID_URL = -25,       /**< text that names no store: an unknown scheme, a bad file: URL (the origin names the part) */
    AMBER_E_UNSUPPORTED = -26,       /**< the store cannot do what was asked (the origin names the capability): nothing was done */
    AMBER_E_HISTORY = -27,           /**< a history token of another store, past the store's history, or before what was purged */
    AMBER_E_SERVER = -28,            /**< a database server refused a statement or could not be reached; the origin is its SQLSTATE */
    AMBER_E_STORAGE = -29,           /**< the disk failed the store's file (full, an I/O error, not writable): the message says what stands (a save writes nothing and keeps its changes); the origin is the file */
    AMBER_E_HOOK = -30,              /**< model logic in code (a validator, will_save or prepare_for_deletion) failed: nothing saved or deleted, every pending change kept; the origin names the hook */
    AMBER_E_INTERNAL = -99           /**< a bug in Amber; please report it with the message */
};

/** The code of the last failing call on this thread (AMBER_OK if none since
 *  the thread started or since amber_clear_error). Never fails. */
amber_status amber_last_error_code(void);

/** A sentence describing the last failure on this thread, naming the place
 *  (entity.attribute, transformer, JSON path, predicate position) and the
 *  reason. Never NULL ("" if no error).
 *
 *  Lifetime: the string is owned by the library and stays valid until the
 *  next failing amber_ call on the same thread or amber_clear_error; copy it
 *  to keep it longer. */
const char *amber_last_error_message(void);

/** What the last failure on this thread concerns: "Book.title", a
 *  transformer's name, a file path, "$.entities[0]"; "" if nothing more
 *  specific than the message. Never NULL; lifetime as for the message. */
const char *amber_last_error_origin(void);

/** One problem of the last error, when it lists several: each broken rule
 *  of a failed save (AMBER_E_SAVE_FAILED), each problem of a model that did
 *  not bind (AMBER_E_INVALID_MODEL). Every string is NUL-terminated UTF-8,
 *  never NULL, and owned by the library, with the lifetime of the message.
 *  New fields are only ever added at the end. */
typedef struct amber_problem {
    /** The object concerned, as amber_object_uri gives it (a new object's
     *  temporary URI included): amber_context_object_with_uri on the saving
     *  context finds it. "" for a model problem or a failure of the store. */
    const char *object_uri;
    /** Where: "Book.title", a constraint "Book(title, author)", "Book" (a
     *  conflict), "Book.indexes[0]" (a model problem). */
    const char *place;
    /** The rule broken, for a save: "required", "minValue", "maxValue",
     *  "minLength", "maxLength", "pattern", "uniqueness", "count" (a to-many's
     *  size), "deny" (a delete rule), "relationship" (a dangling link),
     *  "conflict" (changed in the store since read), "transformer" or "store".
     *  "" for a model problem. More rules may be added. */
    const char *rule;
    /** A sentence naming what was expected and what was found. */
    const char *message;
} amber_problem;

/** How many problems this thread's last error lists (0 for an error that
 *  lists none). A failed save lists its problems at once: validation rules,
 *  links, and uniqueness constraints (checked in the same save: the rows are
 *  written in a transaction that is rolled back; skipped, without waiting,
 *  while another writer holds the store). Never fails. */
size_t amber_last_error_problem_count(void);

/** Problem `index` (from 0) of this thread's last error, or NULL if `index`
 *  is not below amber_last_error_problem_count(). Never fails and never
 *  changes the last error. The struct and its strings are the library's:
 *  valid until the next failing amber_ call on this thread or
 *  amber_clear_error. */
const amber_problem *amber_last_error_problem(size_t index);

/** Resets this thread's last error to AMBER_OK. */
void amber_clear_error(void);

/** Releases memory the library returned: buffers and arrays, as each
 *  function says. NULL is ignored. */
void amber_free(void *pointer);

/* ------------------------------------------------------------------------ */
/* Handles                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct amber_registry amber_registry;   /**< value classes and transformers */
typedef struct amber_model amber_model;         /**< a bound, immutable model */
typedef struct amber_model_builder amber_model_builder; /**< a model being built in code */
typedef struct amber_entity amber_entity;       /**< an entity of a model (owned by the model) */
typedef struct amber_attribute amber_attribute; /**< an attribute of an entity (owned by the model) */
typedef struct amber_relationship amber_relationship; /**< a relationship of an entity (owned by the model) */
typedef struct amber_store amber_store;         /**< an open store */
typedef struct amber_context amber_context;     /**< a scratchpad of objects over a store */
typedef struct amber_object amber_object;       /**< an object (owned by its context) */
typedef struct amber_transformer amber_transformer; /**< a registered transformer, for direct calls */
typedef struct amber_live_query amber_live_query; /**< a fetch request's results, following saves (amber_live_query_new) */
typedef struct amber_batch amber_batch;         /**< fetched values as borrowed views (amber_context_fetch_batch) */

/* ------------------------------------------------------------------------ */
/* Values                                                                   */
/* ------------------------------------------------------------------------ */

/** Value types: the `type` field of amber_value.
 *
 *  Exact or refused: a value set reads back as it was set (type and value),
 *  or the set fails with AMBER_E_INVALID_VALUE naming `Entity.attribute`
 *  and nothing changes. docs/values.md states the value model and its few
 *  limits (a REAL column's -0.0 reads back as 0.0; a Float attribute keeps
 *  the nearest single-precision number). */
enum {
    AMBER_VALUE_NULL = 0,
    AMBER_VALUE_BOOL = 1,      /**< v.boolean: 0 or 1 (anything else is refused) */
    AMBER_VALUE_INT = 2,       /**< v.integer (Integer 16/32/64 attributes check their range; a Double or Float attribute refuses one it cannot hold exactly) */
    AMBER_VALUE_DOUBLE = 3,    /**< v.real (a stored attribute refuses NaN, which SQLite would keep as NULL) */
    AMBER_VALUE_FLOAT = 4,     /**< v.real32 */
    AMBER_VALUE_STRING = 5,    /**< v.text: UTF-8 bytes and their count */
    AMBER_VALUE_BINARY = 6,    /**< v.bytes */
    AMBER_VALUE_DATE = 7,      /**< v.date: seconds since 1970-01-01 UTC, from year 1 to year 9999 (others, and NaN, are refused); kept as seconds since 2001, exact to the microsecond (one moving the origin would change by more is refused) */
    AMBER_VALUE_DECIMAL = 8,   /**< v.text: the number in decimal text ("12.90"), exact up to 38 significant digits (more is refused); read back with the scale it was written with */
    AMBER_VALUE_UUID = 9,      /**< v.uuid: 16 bytes */
    AMBER_VALUE_URI = 10,      /**< v.text */
    AMBER_VALUE_OBJECT_ID = 11, /**< v.text: an object ID's URI form */
    AMBER_VALUE_CUSTOM = 12,   /**< v.custom: a struct or opaque class's name and bytes */
    AMBER_VALUE_PLIST = 13     /**< v.text: an array or dictionary as JSON text, read strictly (RFC 8259; duplicate keys refused): a number with a fraction or exponent is a double, one without a 64-bit integer (beyond: refused); {"$date": "ISO 8601"}, {"$binary": "base64"}, {"$uuid": "…"}, {"$float": n} stand for what JSON lacks, and {"$dictionary": {…}} for a dictionary whose one key is one of those names (docs/values.md) */
};

/** A tagged value, always passed by pointer.
 *
 *  Filled by the caller (for set, arguments, transformer results): every
 *  pointer is borrowed; the library copies what it keeps.
 *  Filled by the library (amber_object_get): the pointers are owned by the
 *  caller, who must call amber_value_release() once done. */
typedef struct amber_value {
    int32_t type; /**< an AMBER_VALUE_* constant */
    union {
        int32_t boolean;
        int64_t integer;
        double real;
        float real32;
        double date;
        uint8_t uuid[16];
        struct {
            const char *data; /**< UTF-8, not necessarily NUL-terminated when given by the caller */
            size_t length;    /**< in bytes */
        } text;
        struct {
            const void *data;
            size_t length;
        } bytes;
        struct {
            const char *class_name; /**< NUL-terminated */
            const void *data;       /**< the value's bytes: for a struct class, the C struct itself */
            size_t length;
        } custom;
    } v;
} amber_value;

/** Frees what an amber_value filled by the library points to and sets it to
 *  AMBER_VALUE_NULL. Do not call it on values you filled yourself. NULL is
 *  ignored. */
void amber_value_release(amber_value *value);

/** Releases `count` library-filled values and then the array itself (as
 *  returned by amber_context_fetch_values). NULL is ignored. */
void amber_values_release(amber_value *values, size_t count);

/* ------------------------------------------------------------------------ */
/* Registries: value classes and transformers                               */
/* ------------------------------------------------------------------------ */

/* One rule for registry arguments: every function that takes an
 * amber_registry * (declaring, registering, loading plugins, looking up,
 * binding and opening models) reads NULL as the shared registry
 * (amber_registry_shared), except amber_registry_free, which refuses NULL
 * as it refuses any NULL handle. */

/** C scalar types of struct fields: the `type` of amber_field. */
enum {
    AMBER_FIELD_INT8 = 1, AMBER_FIELD_INT16, AMBER_FIELD_INT32, AMBER_FIELD_INT64,
    AMBER_FIELD_UINT8, AMBER_FIELD_UINT16, AMBER_FIELD_UINT32, AMBER_FIELD_UINT64,
    AMBER_FIELD_FLOAT, AMBER_FIELD_DOUBLE, AMBER_FIELD_BOOL,
    AMBER_FIELD_STRUCT /**< a nested struct class, named by struct_name */
};

/** The name of field type `type` as the JSON model format and the plugin
 *  ABI spell it ("int8", …, "bool"; "struct" for AMBER_FIELD_STRUCT), its
 *  size and its alignment in bytes on this platform (0 for AMBER_FIELD_STRUCT,
 *  whose layout depends on the nested class). Every out-parameter may be
 *  NULL; *out_name is static and never freed. Safe from any thread.
 *  Errors: AMBER_E_NOT_FOUND for an unknown type. */
amber_status amber_field_type_info(const char **out_name, size_t *out_size, size_t *out_alignment, int32_t type);

/** One field of a struct class. */
typedef struct amber_field {
    const char *name;
    int32_t type;            /**< an AMBER_FIELD_* constant */
    const char *struct_name; /**< for AMBER_FIELD_STRUCT: a struct class declared before; else NULL */
} amber_field;

/** One field of a struct class, as amber_registry_struct_layout and amber_model_struct_layout describe it. */
typedef struct amber_field_info {
    const char *name;        /**< owned by the registry or model handle */
    int32_t type;            /**< an AMBER_FIELD_* constant */
    const char *struct_name; /**< AMBER_FIELD_STRUCT: the nested class (owned likewise); else NULL */
    size_t offset;           /**< from the start of the struct */
} amber_field_info;

/** Names who declares and registers through this library's C API, for the
 *  messages that say where a value class, transformer or function came
 *  from ("transformer \"Shout\" (Python) forward failed", "already
 *  registered by Python"): "C API" by default. A binding calls it once when
 *  it loads (Python's names itself "Python"); NULL restores the default.
 *  Applies to what is declared and registered from then on, in every
 *  registry of the process. The name is copied. Threads: any.
 *  Errors: AMBER_E_INVALID_UTF8; AMBER_E_INVALID_VALUE (an empty name). */
amber_status amber_set_source_name(const char *name);

/** A new, empty registry (holding only the built-in transformers
 *  "AmberArchive", "JSON" and "UTF8"). Free it with amber_registry_free. */
amber_status amber_registry_new(amber_registry **out);

/** The process-wide registry models bind against by default. The handle is
 *  the same on every call and lives for the process: amber_registry_free on
 *  it succeeds and does nothing. */
amber_status amber_registry_shared(amber_registry **out);

/** Releases the handle (the shared registry's handle is never released).
 *  Models bound against the registry keep what they resolved; a
 *  transformer's userdata_free runs when neither the registry nor any bound
 *  model uses the transformer any more. */
amber_status amber_registry_free(amber_registry *registry);

/** Declares a struct class of `field_count` fields. Its layout (size,
 *  alignment, offsets) is computed by libffi, so it equals what this
 *  platform's C compiler gives the same struct.
 *  Errors: AMBER_E_DUPLICATE (name taken), AMBER_E_INVALID_DECLARATION (bad
 *  name, duplicate field, unknown nested struct), AMBER_E_NOT_FOUND. */
amber_status amber_registry_declare_struct(amber_registry *registry, const char *name,
                                           const amber_field *fields, size_t field_count);

/** Declares an opaque class: bytes only its transformers understand. With
 *  fixed_size > 0 every value must have exactly that many bytes; 0 means any. */
amber_status amber_registry_declare_opaque(amber_registry *registry, const char *name, size_t fixed_size);

/** The layout of struct class `name` as `registry` declares it: size,
 *  alignment, and each field (name, type, offset) into out_fields (may be NULL
 *  when capacity is 0); the strings are owned by the registry handle.
 *  *out_field_count receives the number of fields; if it exceeds capacity the
 *  call fails with AMBER_E_BUFFER_TOO_SMALL after setting *out_field_count only. */
amber_status amber_registry_struct_layout(size_t *out_size, size_t *out_alignment, amber_field_info *out_fields,
                                          size_t *out_field_count, size_t capacity, amber_registry *registry,
                                          const char *name);

/** A transformer function: converts `*input` into `*output`.
 *
 *  `input` and what it points to are borrowed for the call. The function
 *  fills `*output` (initially AMBER_VALUE_NULL) with a value whose pointers
 *  stay valid until the host calls the transformer's `release` (or, if
 *  release is NULL, for the life of the process). Return AMBER_OK, or any
 *  negative code to report failure (the host then names the transformer in
 *  its error). The host checks the result's class and size against what the
 *  transformer declares, on every call; a NULL result for a non-NULL input
 *  is an error too (the value would be lost), so a transformer never turns a
 *  value into no value. Called on the thread of the context being read or
 *  saved. */
typedef int32_t (*amber_transform_fn)(amber_value *output, const amber_value *input, void *userdata);

/** Called from inside a transformer function that is about to fail: the host
 *  puts `message` (copied) in the error it reports for this call, after the
 *  transformer's name. Affects only the calling thread's current call. */
void amber_transformer_error(const char *message);

/** Releases what a transformer put in `*output`: called once for every call
 *  that returned 0, after the host has read the result, also when the host
 *  then refuses it (another class or size) and when the transformer left
 *  `*output` a null value; never after a call that returned an error (its
 *  function frees what it made before failing). */
typedef void (*amber_release_fn)(amber_value *output, void *userdata);

/** Frees a transformer's userdata. */
typedef void (*amber_userdata_free_fn)(void *userdata);

/** Registers a transformer named `name` from class `input_class` to class
 *  `output_class` (built-in class names: "Binary", "String", "Integer",
 *  "Double", "Float", "Boolean", "Date", "Decimal", "UUID", "URI",
 *  "PropertyList"; or a declared class). `reverse` may be NULL for a one-way
 *  transformer (which cannot store values). `release` may be NULL when
 *  results point to static memory.
 *
 *  The classes need not be declared yet: binding a model that uses the
 *  transformer checks them, and so does amber_registry_transformer.
 *
 *  `userdata_free` (may be NULL) runs exactly once: right away if the
 *  registration fails, otherwise when the transformer is no longer used by
 *  the registry or by any model bound with it.
 *  Errors: AMBER_E_DUPLICATE (the message names both sources),
 *  AMBER_E_INVALID_DECLARATION (a name that is not an identifier),
 *  AMBER_E_NULL_ARGUMENT (forward). */
amber_status amber_registry_register_transformer(amber_registry *registry, const char *name,
                                                 const char *input_class, const char *output_class,
                                                 amber_transform_fn forward, amber_transform_fn reverse,
                                                 amber_release_fn release, void *userdata,
                                                 amber_userdata_free_fn userdata_free);

/** amber_registry_register_transformer, replacing a transformer already
 *  registered under `name` (by this API, Swift, Python or a plugin; not a
 *  built-in one, and not a function): models bound from then on use the new
 *  one, models bound before keep the one they bound. The replaced
 *  transformer's userdata_free runs once no model uses it. With no
 *  transformer of that name, it simply registers. Errors: as
 *  amber_registry_register_transformer (AMBER_E_DUPLICATE for a built-in
 *  transformer's or a function's name). */
amber_status amber_registry_replace_transformer(amber_registry *registry, const char *name,
                                                const char *input_class, const char *output_class,
                                                amber_transform_fn forward, amber_transform_fn reverse,
                                                amber_release_fn release, void *userdata,
                                                amber_userdata_free_fn userdata_free);

/** A function that computes a computed attribute's value from the values of
 *  its sources (amber_attribute_spec.computed_by): `inputs` holds `count`
 *  values, borrowed for the call, in the order the attribute names its
 *  sources. Put the result in *output (released afterwards with the
 *  `release` given at registration) and return AMBER_OK, or return a
 *  negative code to fail (amber_transformer_error adds a message). The host
 *  checks the result against the attribute's type or value class on every
 *  call. Called on the thread of the context reading the attribute, which may
 *  be several threads at once (the function must be thread-safe), on the
 *  first read after the object's sources were set, refreshed, merged or
 *  rolled back (the value is cached until then). */
typedef int32_t (*amber_compute_fn)(amber_value *output, const amber_value *inputs, size_t count, void *userdata);

/** Registers a function named `name` for computed attributes to name. No
 *  other function or transformer of `registry` (NULL: shared) may have the
 *  name. `release` may be NULL when results point to static memory.
 *  `userdata_free` (may be NULL) runs exactly once: right away if the
 *  registration fails, otherwise when no registry or model uses the function.
 *  Errors: AMBER_E_DUPLICATE (the message names both sources),
 *  AMBER_E_INVALID_DECLARATION (a bad name), AMBER_E_NULL_ARGUMENT (function). */
amber_status amber_registry_register_function(amber_registry *registry, const char *name, amber_compute_fn function,
                                              amber_release_fn release, void *userdata, amber_userdata_free_fn userdata_free);

/** A handle for calling the transformer `name` of `registry` (NULL: shared)
 *  directly, outside any store, with the checks a store applies: every input
 *  must be of the transformer's input class and every result of its output
 *  class (and size). Free it with amber_transformer_free; the transformer
 *  stays usable while the handle lives, even if the registry is freed.
 *  Any thread may call a transformer handle (a plugin transformer that is not
 *  thread-safe is serialized).
 *  Errors: AMBER_E_NOT_FOUND (the message has the nearest name). */
amber_status amber_registry_transformer(amber_transformer **out, amber_registry *registry, const char *name);

/** Releases a transformer handle. Any thread may release it, also while
 *  other threads are calling through it: their calls finish normally, and
 *  every later call through the handle fails with AMBER_E_INVALID_HANDLE.
 *  Calls through a live handle take no lock (beyond a plugin transformer's
 *  own, if it is not thread-safe). */
amber_status amber_transformer_free(amber_transformer *transformer);

/** The transformer's input and output classes (static for the handle's
 *  life, owned by it) and the byte size of their values: the struct size, an
 *  opaque class's fixed size, or 0 when values have no fixed size. Any
 *  out-parameter may be NULL. */
amber_status amber_transformer_classes(const char **out_input_class, size_t *out_input_size, const char **out_output_class,
                                       size_t *out_output_size, amber_transformer *transformer);

/** Converts `*input` (a value of the input class) forward. *out is owned by
 *  the caller: release it with amber_value_release.
 *  Errors: AMBER_E_TRANSFORMER (a wrong input class, the transformer failed
 *  or returned something other than it declares; the message says which),
 *  AMBER_E_INVALID_VALUE (a malformed amber_value). */
amber_status amber_transformer_forward(amber_value *out, amber_transformer *transformer, const amber_value *input);

/** amber_transformer_forward in the other direction.
 *  Errors: as forward; AMBER_E_TRANSFORMER for a one-way transformer. */
amber_status amber_transformer_reverse(amber_value *out, amber_transformer *transformer, const amber_value *input);

/** The byte path, for transformers between byte forms (a struct or opaque
 *  class, or Binary): converts the `input_length` bytes at `input` forward
 *  into `output`, which holds `output_capacity` bytes, and sets
 *  *out_length to the bytes written. No value is built and nothing is
 *  allocated; the class and size checks still run on every call. A plugin
 *  that provides forward_bytes (plugin ABI minor 2) is called directly.
 *  Errors: AMBER_E_TRANSFORMER (an input of the wrong size, a buffer too
 *  small for the output class, a class whose values are not bytes, or the
 *  transformer's own failure), AMBER_E_NULL_ARGUMENT. */
amber_status amber_transformer_forward_bytes(size_t *out_length, amber_transformer *transformer, const void *input,
                                             size_t input_length, void *output, size_t output_capacity);

/** amber_transformer_forward_bytes in the other direction. */
amber_status amber_transformer_reverse_bytes(size_t *out_length, amber_transformer *transformer, const void *input,
                                             size_t input_length, void *output, size_t output_capacity);

/** The byte path for `count` values in one call: amber_transformer_forward_bytes
 *  on each, with the same class and size checks, one transformer call each,
 *  and no per-value call across the C boundary (what makes it worth having
 *  from languages whose foreign calls are slow, such as Python).
 *
 *  Input: the `input_size` bytes at `input` hold the values. With
 *  `input_lengths` NULL, value i is the `input_stride` bytes at
 *  i × input_stride (a C array of structs: input_stride is their size);
 *  otherwise value i has input_lengths[i] bytes, right after value i − 1,
 *  and input_stride must be 0.
 *
 *  Output: with `output_stride` > 0, result i is written at
 *  i × output_stride with output_stride bytes of room (use the output
 *  class's size); with output_stride 0, each result is written right after
 *  the previous one, with the rest of the buffer as its room.
 *  `output_size` is the buffer's size. out_lengths (may be NULL) receives
 *  each result's byte count: an array of `count` the caller provides.
 *
 *  Everything is borrowed for the call. Any thread may call it, as for the
 *  single-value form.
 *  Errors: AMBER_E_TRANSFORMER for the first value that fails (a wrong size,
 *  no room for its result, the transformer's own failure); the message names
 *  the transformer and "element i". Results before element i are written
 *  (and their lengths), nothing after it is converted.
 *  AMBER_E_INVALID_VALUE for a layout that does not fit its buffer (lengths
 *  or count × stride beyond input_size, count × output_stride beyond
 *  output_size, both input_stride and input_lengths set);
 *  AMBER_E_NULL_ARGUMENT for a NULL buffer that should hold bytes. */
amber_status amber_transformer_forward_bytes_array(size_t *out_lengths, amber_transformer *transformer, size_t count,
                                                   const void *input, size_t input_size, size_t input_stride,
                                                   const size_t *input_lengths, void *output, size_t output_size,
                                                   size_t output_stride);

/** amber_transformer_forward_bytes_array in the other direction. */
amber_status amber_transformer_reverse_bytes_array(size_t *out_lengths, amber_transformer *transformer, size_t count,
                                                   const void *input, size_t input_size, size_t input_stride,
                                                   const size_t *input_lengths, void *output, size_t output_size,
                                                   size_t output_stride);

/** Loads the plugin (a shared library exporting amber_plugin_entry, see
 *  amber_plugin.h) at `path` into `registry` (NULL: shared): its value
 *  classes and transformers are registered all at once, or not at all.
 *  `configuration` (may be NULL) is passed to each transformer's create,
 *  for example "key=<64 hex digits>" for the aesgcm sample plugin.
 *  The file must not be writable by group or others; it stays loaded for the
 *  life of the process. Call it on any thread, before binding models that use it.
 *  Errors: AMBER_E_PLUGIN_REFUSED; the message names the file, the class or
 *  transformer, and what was expected against what was found (origin: the path). */
amber_status amber_registry_load_plugin(amber_registry *registry, const char *path, const char *configuration);

/** Loads every "*.so" file of `directory`, in name order, as
 *  amber_registry_load_plugin does; stops at the first refusal (plugins
 *  loaded before it stay loaded). *out_count receives how many loaded, on
 *  success and after a refusal alike (0 when the directory cannot be read).
 *  Errors: AMBER_E_PLUGIN_REFUSED, as amber_registry_load_plugin (origin:
 *  the refused file), or for a directory that cannot be listed. */
amber_status amber_registry_load_plugin_directory(size_t *out_count, amber_registry *registry, const char *directory,
                                                  const char *configuration);

/* ------------------------------------------------------------------------ */
/* Models                                                                   */
/* ------------------------------------------------------------------------ */

/** Reads a model from JSON text (the format of docs/model-json.md) and binds
 *  it against `registry` (NULL: the shared registry). Free it with
 *  amber_model_free.
 *  Errors: AMBER_E_INVALID_JSON (origin: the JSON path), AMBER_E_INVALID_MODEL
 *  (the message lists every problem with its place). */
amber_status amber_model_from_json(amber_model **out, const char *json, size_t length, amber_registry *registry);

/** Like amber_model_from_json, reading the file at `path`. */
amber_status amber_model_from_file(amber_model **out, const char *path, amber_registry *registry);

/** Imports an Xcode data model and binds it against `registry` (NULL: the
 *  shared registry): a `.xcdatamodeld` bundle (its current version, or the
 *  version named `version`, such as "Model 2"), a `.xcdatamodel` folder or
 *  its `contents` file, read by the rules of docs/xcode-models.md. It is
 *  how a store Core Data wrote is opened: with the model it was made with
 *  (see amber_store_open_url). Free the model with amber_model_free.
 *
 *  `out_notes`, unless NULL, receives what the import changed or left out,
 *  one note per line ("Entity.attribute: ..."), NUL-terminated and owned by
 *  the caller (amber_free); an empty string when there is none. `version`
 *  may be NULL; with a folder or contents file it must be.
 *  Errors: AMBER_E_INVALID_MODEL for a file that cannot be read or parsed
 *  (origin: the file; the message has the line) and for a model that does
 *  not bind (the message lists every problem with its place). */
amber_status amber_model_from_xcode(amber_model **out, char **out_notes, const char *path, const char *version,
                                    amber_registry *registry);

/** The model as JSON text in the model file format. *out is NUL-terminated
 *  and owned by the caller (amber_free); *out_length excludes the NUL. */
amber_status amber_model_to_json(char **out, size_t *out_length, amber_model *model);

/** Releases the model handle and the entity and attribute handles it gave
 *  out. Stores opened with the model keep working. */
amber_status amber_model_free(amber_model *model);

/** The entity named `name`. The handle is owned by the model (valid until
 *  amber_model_free) and is the same on every call.
 *  Errors: AMBER_E_NOT_FOUND, with the nearest name in the message. */
amber_status amber_model_entity(amber_entity **out, amber_model *model, const char *name);

/** The attribute named `name` of `entity`; owned by the model, like entities.
 *  Resolve attributes once and use the handle in loops. */
amber_status amber_entity_attribute(amber_attribute **out, amber_entity *entity, const char *name);

/** The entity's name: NUL-terminated, owned by the model. */
amber_status amber_entity_name(const char **out, amber_entity *entity);

/** How many attributes `entity` has; with amber_entity_attribute_at, a way to list them. */
amber_status amber_entity_attribute_count(size_t *out, amber_entity *entity);

/** The attribute at `index` (0-based, model order) of `entity`.
 *  Errors: AMBER_E_NOT_FOUND if index >= the attribute count. */
amber_status amber_entity_attribute_at(amber_attribute **out, amber_entity *entity, size_t index);

/** The attribute's name: NUL-terminated, owned by the model. */
amber_status amber_attribute_name(const char **out, amber_attribute *attribute);

/** The attribute's type: an AMBER_TYPE_* constant. */
amber_status amber_attribute_type(int32_t *out, amber_attribute *attribute);

/** The class a transformable or undefined attribute's values must have
 *  ("Color", "PropertyList", "String", …), owned by the model; NULL for an
 *  undefined attribute that takes any value and for other types. */
amber_status amber_attribute_value_class(const char **out, amber_attribute *attribute);

/** A derived attribute's expression ("canonical:(title)", "books.@count", …),
 *  owned by the model; NULL for an attribute callers set. Setting a derived
 *  attribute fails with AMBER_E_INVALID_VALUE naming it. */
amber_status amber_attribute_derivation(const char **out, amber_attribute *attribute);

/** A computed attribute's function name in *out_function and its sources'
 *  names in *out_sources (*out_source_count of them), all owned by the model;
 *  *out_function is NULL (and the count 0) for an attribute that is not
 *  computed. `out_sources` may be NULL. Setting a computed attribute fails
 *  with AMBER_E_INVALID_VALUE naming it; a function that fails, or returns a
 *  value the attribute cannot hold, makes the read fail with AMBER_E_TRANSFORMER
 *  naming the attribute and the function. */
amber_status amber_attribute_computation(const char **out_function, const char *const **out_sources, size_t *out_source_count,
                                         amber_attribute *attribute);


/** The layout of struct class `name` as `model` sees it (declared by the
 *  model or by the registry it was bound with): size, alignment, and each
 *  field into out_fields (may be NULL when capacity is 0). *out_field_count
 *  receives the number of fields; if it exceeds capacity the call fails with
 *  AMBER_E_BUFFER_TOO_SMALL after setting *out_field_count only. This is how
 *  bindings marshal struct values field by field. */
amber_status amber_model_struct_layout(size_t *out_size, size_t *out_alignment, amber_field_info *out_fields,
                                       size_t *out_field_count, size_t capacity, amber_model *model, const char *name);

/** Attribute types: the `type` of amber_attribute_spec. */
enum {
    AMBER_TYPE_INTEGER16 = 1, AMBER_TYPE_INTEGER32, AMBER_TYPE_INTEGER64, AMBER_TYPE_DECIMAL,
    AMBER_TYPE_DOUBLE, AMBER_TYPE_FLOAT, AMBER_TYPE_STRING, AMBER_TYPE_BOOLEAN, AMBER_TYPE_DATE,
    AMBER_TYPE_BINARY, AMBER_TYPE_UUID, AMBER_TYPE_URI, AMBER_TYPE_TRANSFORMABLE, AMBER_TYPE_UNDEFINED
};

/** Flags of amber_attribute_spec. */
enum {
    AMBER_ATTRIBUTE_REQUIRED = 1,        /**< nil is refused at save (attributes are optional otherwise) */
    AMBER_ATTRIBUTE_TRANSIENT = 2,       /**< tracked, never stored */
    AMBER_ATTRIBUTE_INDEXED = 4,         /**< the store keeps an index */
    AMBER_ATTRIBUTE_DECODE_EAGER = 8,    /**< decode stored values at fetch, not on first read */
    AMBER_ATTRIBUTE_ENCODE_IMMEDIATE = 16, /**< encode on every set, not at save */
    AMBER_ATTRIBUTE_EXTERNAL_STORAGE = 32 /**< Core Data's "Allows External Storage" (binary and transformable attributes):
                                               a store Core Data made keeps such values behind a marker byte, or in a file */
};

/** An attribute to add with amber_model_builder_add_attribute. Start from
 *  AMBER_ATTRIBUTE_SPEC_INIT (which sets `size` and zero-fills the rest) and
 *  set what applies; every pointer is borrowed for the call. */
typedef struct amber_attribute_spec {
    size_t size;                    /**< sizeof(amber_attribute_spec) as the caller was compiled: set by the _INIT */
    const char *name;
    int32_t type;                   /**< an AMBER_TYPE_* constant */
    uint32_t flags;                 /**< AMBER_ATTRIBUTE_* flags, or-ed */
    const amber_value *default_value; /**< NULL: none */
    const amber_value *min_value;   /**< NULL: none (numbers, decimals, dates) */
    const amber_value *max_value;   /**< NULL: none */
    int64_t min_length;             /**< -1 or 0: none (characters or bytes) */
    int64_t max_length;             /**< -1 or 0: none */
    const char *pattern;            /**< NULL: none; a regular expression the whole string must match */
    const char *value_class;        /**< transformable/undefined: NULL for plist-like / any values */
    const char *const *transformers; /**< the chain, first link first */
    size_t transformer_count;       /**< 0 on a transformable attribute: the default archive */
    const char *storage;            /**< transient with transformers: the persistent attribute keeping its encoded form */
    const char *derived;            /**< NULL, or a derived attribute's expression: "canonical:(title)", "author.name",
                                         "books.@count", "now()", … (docs/model-json.md); the store computes it at save
                                         and sets refuse it. A bad expression fails amber_model_builder_bind with its
                                         position. Callers built before this field pass a smaller size: none. */
    const char *computed_by;        /**< NULL, or the function (amber_registry_register_function, or a transformer for
                                         one source) that computes this transient attribute from `sources`; the value
                                         is computed on first read, cached until a source changes, and sets refuse it.
                                         Implies AMBER_ATTRIBUTE_TRANSIENT. Checked at bind: sources, function, classes. */
    const char *const *sources;     /**< the entity's attributes whose values the function receives, in order */
    size_t source_count;
} amber_attribute_spec;

/** Initializer of amber_attribute_spec:
 *  `amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;` */
#define AMBER_ATTRIBUTE_SPEC_INIT { sizeof(amber_attribute_spec), NULL, 0, 0, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, 0 }

/** A new, empty model builder. Free it with amber_model_builder_free. */
amber_status amber_model_builder_new(amber_model_builder **out);

/** Releases the builder (models built from it are unaffected). */
amber_status amber_model_builder_free(amber_model_builder *builder);

/** Adds an entity. Names are checked when the model is bound. */
amber_status amber_model_builder_add_entity(amber_model_builder *builder, const char *name);

/** Makes the entity named `entity` inherit from the entity named `parent`
 *  (NULL: from none), and abstract when `abstract` is nonzero (only its
 *  sub-entities have objects). A sub-entity has its parent's attributes and
 *  relationships first, lives in its hierarchy's root table, and comes with
 *  its parent's fetches. Errors: AMBER_E_NOT_FOUND (entity); unknown parents
 *  and cycles are reported at bind. */
amber_status amber_model_builder_set_parent(amber_model_builder *builder, const char *entity, const char *parent,
                                            int32_t abstract);

/** Makes the entity named `entity` extensible (`extensible` nonzero) or not:
 *  its objects then take extended attributes, keys the model does not name,
 *  set and read by name at run time with no migration (see
 *  amber_object_set_named). Sub-entities of an extensible entity are
 *  extensible. Errors: AMBER_E_NOT_FOUND (entity). */
amber_status amber_model_builder_set_extensible(amber_model_builder *builder, const char *entity, int32_t extensible);

/** *out = 1 if `entity`'s objects take extended attributes, else 0. */
amber_status amber_entity_is_extensible(int32_t *out, amber_entity *entity);

/** The entity `entity` inherits from; *out is NULL if none. The handle is owned by the model. */
amber_status amber_entity_parent(amber_entity **out, amber_entity *entity);

/** How many entities inherit from `entity`, directly or not (a fetch of
 *  `entity` returns their objects too). An object's own entity is
 *  amber_object_entity's; attribute and relationship handles of an entity
 *  work with objects of the entities that inherit from it. */
amber_status amber_entity_subentity_count(size_t *out, amber_entity *entity);

/** Adds an attribute to the entity named `entity` (added before).
 *  Errors: AMBER_E_NOT_FOUND (entity), AMBER_E_INVALID_VALUE (a malformed
 *  spec: unknown type or flags, bad value); model rules are checked at bind. */
amber_status amber_model_builder_add_attribute(amber_model_builder *builder, const char *entity,
                                               const amber_attribute_spec *spec);

/** Flags of amber_relationship_spec. */
enum {
    AMBER_RELATIONSHIP_TO_MANY = 1, /**< a collection of objects (else one object or none) */
    AMBER_RELATIONSHIP_ORDERED = 2, /**< to-many: members keep the order they are given */
    AMBER_RELATIONSHIP_REQUIRED = 4, /**< a to-one must point at an object at save; a to-many have its min_count even when empty (without one it may be empty, as in Core Data) */
    AMBER_RELATIONSHIP_ONE_WAY = 8  /**< declared without an inverse, on purpose (docs/model-json.md) */
};

/** Delete rules: what deleting the source does to the destinations. */
enum {
    AMBER_DELETE_NULLIFY = 0,  /**< they forget the deleted object (the default) */
    AMBER_DELETE_CASCADE = 1,  /**< they are deleted too */
    AMBER_DELETE_DENY = 2,     /**< the save fails while any remain */
    AMBER_DELETE_NO_ACTION = 3 /**< nothing; a save that would leave a link to the deleted object fails */
};

/** A relationship to add with amber_model_builder_add_relationship, or one
 *  described by amber_relationship_describe. Start from
 *  AMBER_RELATIONSHIP_SPEC_INIT; every pointer is borrowed for the call (or,
 *  from amber_relationship_describe, owned by the relationship handle). */
typedef struct amber_relationship_spec {
    size_t size;             /**< sizeof(amber_relationship_spec) as the caller was compiled: set by the _INIT */
    const char *name;
    const char *destination; /**< the entity it points at */
    const char *inverse;     /**< the destination's relationship that points back; NULL only with ONE_WAY */
    uint32_t flags;          /**< AMBER_RELATIONSHIP_* flags, or-ed */
    int32_t delete_rule;     /**< an AMBER_DELETE_* constant */
    int64_t min_count;       /**< to-many: the fewest members at save (an optional one may also be empty); -1: none */
    int64_t max_count;       /**< to-many: the most members at save; -1: none */
} amber_relationship_spec;

/** Initializer of amber_relationship_spec:
 *  `amber_relationship_spec spec = AMBER_RELATIONSHIP_SPEC_INIT;` */
#define AMBER_RELATIONSHIP_SPEC_INIT { sizeof(amber_relationship_spec), NULL, NULL, NULL, 0, 0, -1, -1 }

/** Adds a relationship to the entity named `entity` (added before). Inverses,
 *  destinations and counts are checked when the model is bound, every
 *  problem listed with its place (`Book.author`) and the nearest names.
 *  Errors: AMBER_E_NOT_FOUND (entity), AMBER_E_INVALID_VALUE (an unknown
 *  delete rule or flag). */
amber_status amber_model_builder_add_relationship(amber_model_builder *builder, const char *entity,
                                                  const amber_relationship_spec *spec);

/** The relationship named `name` of `entity`. The handle is owned by the
 *  model, like attribute handles. Errors: AMBER_E_NOT_FOUND (the message
 *  has the nearest name). */
amber_status amber_entity_relationship(amber_relationship **out, amber_entity *entity, const char *name);

/** The number of relationships of `entity`. */
amber_status amber_entity_relationship_count(size_t *out, amber_entity *entity);

/** The relationship at `index` (0-based, model order) of `entity`. */
amber_status amber_entity_relationship_at(amber_relationship **out, amber_entity *entity, size_t index);

/** Describes `relationship` in `*out` (whose `size` the caller set with
 *  AMBER_RELATIONSHIP_SPEC_INIT): its name, destination, inverse (NULL for
 *  a one-way relationship), flags, delete rule and counts. The strings are
 *  owned by the relationship handle. */
amber_status amber_relationship_describe(amber_relationship_spec *out, amber_relationship *relationship);

/** Adds a compound index over `count` attributes of `entity`. */
amber_status amber_model_builder_add_index(amber_model_builder *builder, const char *entity,
                                           const char *const *attributes, size_t count);

/** Adds a uniqueness constraint over `count` attributes of `entity`. */
amber_status amber_model_builder_add_unique(amber_model_builder *builder, const char *entity,
                                            const char *const *attributes, size_t count);

/** Sets a user-info entry of `entity`, or of its attribute `attribute` when not NULL. */
amber_status amber_model_builder_set_user_info(amber_model_builder *builder, const char *entity,
                                               const char *attribute, const char *key, const char *value);

/** Declares a struct class in the model itself (as "valueClasses" in JSON). */
amber_status amber_model_builder_declare_struct(amber_model_builder *builder, const char *name,
                                                const amber_field *fields, size_t field_count);

/** Declares an opaque class in the model itself; fixed_size 0 means any size. */
amber_status amber_model_builder_declare_opaque(amber_model_builder *builder, const char *name, size_t fixed_size);

/* Fetch request templates: requests named in the model whose predicate takes
 * $VARIABLES, filled in at each fetch (Core Data's fetch request templates).
 * A template is parsed and its names checked when the model is bound; fetch
 * one with amber_fetch_request.template_name and .variable_names/_values. */

/** A sort key of amber_fetch_request and amber_template_spec. */
typedef struct amber_sort {
    const char *key;          /**< an attribute name */
    int32_t descending;       /**< nonzero: largest first */
    int32_t case_insensitive; /**< nonzero: compare strings ignoring case */
} amber_sort;

/** A fetch request template to add with amber_model_builder_add_template,
 *  or one described by amber_model_template_at; also a fetched property to
 *  add with amber_model_builder_add_fetched_property. Start from
 *  AMBER_TEMPLATE_SPEC_INIT; every pointer is borrowed for the call (or,
 *  from amber_model_template_at, owned by the model). */
typedef struct amber_template_spec {
    size_t size;               /**< sizeof(amber_template_spec) as the caller was compiled: set by the _INIT */
    const char *name;          /**< unique within the model */
    const char *entity;        /**< the entity it fetches */
    const char *predicate;     /**< NULL: all objects; Core Data predicate text where $NAME marks a variable (no %@ or %K) */
    const amber_sort *sort;    /**< sort keys, first key first */
    size_t sort_count;
    int64_t limit;             /**< at most this many; 0: no limit */
    /** A fetched property's user info, which its predicate reads as
     *  $FETCHED_PROPERTY.userInfo.KEY: `user_info_count` keys and their
     *  values (a template has none: 0 here, or AMBER_E_INVALID_VALUE). */
    const char *const *user_info_keys;
    const char *const *user_info_values;
    size_t user_info_count;
} amber_template_spec;

/** Initializer of amber_template_spec:
 *  `amber_template_spec spec = AMBER_TEMPLATE_SPEC_INIT;` */
#define AMBER_TEMPLATE_SPEC_INIT { sizeof(amber_template_spec), NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, 0 }

/** Adds a fetch request template. Names, the predicate (with the position
 *  of a problem), key paths and sort keys are checked when the model is
 *  bound, each problem placed as "templates.NAME".
 *  Errors: AMBER_E_INVALID_VALUE (a bad `size`, a negative limit). */
amber_status amber_model_builder_add_template(amber_model_builder *builder, const amber_template_spec *spec);

/** Adds a fetched property named spec->name to `entity`: a read-only
 *  property whose value is a fetch of spec->entity objects with
 *  spec->predicate (which reads $FETCH_SOURCE as the object the property is
 *  read on, $FETCH_SOURCE.path as its value there, and
 *  $FETCHED_PROPERTY.userInfo.KEY as an entry of spec's user info),
 *  spec->sort and spec->limit; read it with amber_object_fetched_objects. Its predicate,
 *  key paths and variables are checked when the model is bound, each
 *  problem placed as "Entity.name". Errors: AMBER_E_NOT_FOUND (no such
 *  entity in the builder), AMBER_E_INVALID_VALUE (a bad `size`, a negative
 *  limit). */
amber_status amber_model_builder_add_fetched_property(amber_model_builder *builder, const char *entity, const amber_template_spec *spec);

/** The number of fetch request templates of `model`. */
amber_status amber_model_template_count(size_t *out, amber_model *model);

/** Describes the template at `index` (0-based, model order) in `*out`
 *  (whose `size` the caller set with AMBER_TEMPLATE_SPEC_INIT), and, when
 *  `out_variables` is not NULL, its variables' names (without the $, in the
 *  order they first appear) in *out_variables, *out_variable_count of them.
 *  Every string and array is owned by the model.
 *  Errors: AMBER_E_NOT_FOUND (index past the templates). */
amber_status amber_model_template_at(amber_template_spec *out, const char *const **out_variables, size_t *out_variable_count,
                                     amber_model *model, size_t index);

/** Binds what the builder holds against `registry` (NULL: shared) into a
 *  new model (amber_model_free). The builder stays usable.
 *  Errors: AMBER_E_INVALID_MODEL listing every problem. */
amber_status amber_model_builder_bind(amber_model **out, amber_model_builder *builder, amber_registry *registry);

/* ------------------------------------------------------------------------ */
/* Stores                                                                   */
/* ------------------------------------------------------------------------ */

/** Opens (creating if needed) the store at `path` with `model`, with the
 *  default options (a busy timeout of 5 seconds; a store made with another
 *  model is backed up and migrated, see amber_store_options); `path` NULL
 *  opens an in-memory store. Close it with amber_store_close. Any thread may
 *  use the store handle.
 *  Errors: AMBER_E_MIGRATION_FAILED (the message lists every change that
 *  cannot be inferred or every object that stopped the migration; the store
 *  is unchanged), AMBER_E_NOT_A_STORE, AMBER_E_SQLITE. */
amber_status amber_store_open(amber_store **out, const char *path, amber_model *model);

/** Called as a migration proceeds (see amber_store_options): `step` names
 *  what is being done ("copy Book", "re-encode Book.cover"; valid during the
 *  call), `completed` of `total` rows. Runs on the thread opening the store.
 *  Return 0 to go on; any other value cancels the migration, which then
 *  changes nothing and the open fails with AMBER_E_MIGRATION_FAILED. */
typedef int32_t (*amber_migration_progress_fn)(void *context, const char *step, uint64_t completed, uint64_t total);

/** How a store is opened. Start from AMBER_STORE_OPTIONS_INIT (which sets
 *  `size` and the defaults); fields added later keep their defaults for
 *  callers compiled before them. */
typedef struct amber_store_options {
    size_t size;              /**< sizeof(amber_store_options) as the caller was compiled: set by the _INIT */
    int64_t busy_timeout_ms;  /**< how long a save or read waits for another connection's lock
                                   before failing with AMBER_E_BUSY; 0 fails at once (default 5000) */
    int32_t migrate;          /**< nonzero (default 1): a store made with another model is migrated to this
                                   one in one transaction (see amber_store_migration_plan); 0: the open
                                   fails with AMBER_E_MODEL_MISMATCH instead */
    int32_t backup;           /**< nonzero (default 1): a migration first copies the store, with SQLite's
                                   backup API, to "<path>.<old model version hash>.backup"; if that copy
                                   cannot be written nothing is done (AMBER_E_MIGRATION_FAILED) */
    amber_migration_progress_fn progress; /**< called as a migration proceeds; NULL (default): not told */
    void *progress_context;   /**< passed to `progress` as is */
    int32_t durability;       /**< what a save that returned survives: AMBER_DURABILITY_NORMAL (default) or
                                   AMBER_DURABILITY_FULL. Either way a crash never damages the store or
                                   leaves a save half written */
    int32_t history;          /**< nonzero (default 1): each save's changes are recorded in the store's
                                   history (amber_store_history), and contexts in other processes merge
                                   exactly them; 0: a save records only that it happened, and other
                                   processes' contexts compare every object they hold after it */
    int32_t allow_data_removal; /**< nonzero: a migration may remove stored data (the objects of an entity the
                                   new model drops, the values of a dropped attribute, the links of a dropped
                                   relationship); 0 (default): such a migration fails with
                                   AMBER_E_MIGRATION_FAILED listing what it would remove, the store unchanged
                                   and no backup left. amber_store_migration_plan lists the data too */
} amber_store_options;

/** A save survives the process crashing or being killed; a power failure
 *  or operating-system crash may undo the last saves (SQLite's WAL with
 *  synchronous=NORMAL). The default. */
#define AMBER_DURABILITY_NORMAL 0
/** A save survives power failure too: the log is synced to disk before each
 *  save returns (synchronous=FULL), at the cost of one fsync per save. */
#define AMBER_DURABILITY_FULL 1

/** `amber_store_options options = AMBER_STORE_OPTIONS_INIT;` */
#define AMBER_STORE_OPTIONS_INIT { sizeof(amber_store_options), 5000, 1, 1, NULL, NULL, AMBER_DURABILITY_NORMAL, 1, 0 }

/** amber_store_open with `options` (NULL: the defaults). Several processes
 *  may create the same new store at once: one makes it, the others open it.
 *  Errors: as amber_store_open; AMBER_E_INVALID_VALUE for a negative
 *  timeout or a bad `size`; AMBER_E_BUSY if another connection kept the
 *  file locked past the timeout; AMBER_E_MODEL_MISMATCH (migrate is 0) or
 *  AMBER_E_MIGRATION_FAILED (the message lists every problem; the store is
 *  unchanged) for a store made with another model. */
amber_status amber_store_open_with_options(amber_store **out, const char *path, amber_model *model,
                                           const amber_store_options *options);

/** Opens the store `url` names with `model` and `options` (NULL: the
 *  defaults), the same names every language and the CLI take: a path or a
 *  "file:" URL ("file:///data/library.amber", percent-encoded) for an SQLite
 *  file, created with its tables when missing or empty; "memory:" for a new
 *  in-memory store; "postgresql://user@host:port/db?schema=NAME" (or
 *  "postgres://", libpq's URI and options) for a store on a PostgreSQL
 *  server, its tables made in schema NAME ("public" by default) when it has
 *  none. Text starting with a scheme before any '/' is a URL: write a path
 *  with a colon before its first slash as "./a:b".
 *  *out is owned by the caller (amber_store_close).
 *  On PostgreSQL, backups to a file and checkpoints are refused with
 *  AMBER_E_UNSUPPORTED naming them; a migration runs in
 *  one transaction under the store's lock, and options.backup does not
 *  apply (the server keeps no copy).
 *  A file Core Data wrote (an app's ".sqlite", its "-wal" beside it) opens
 *  with the model it was made with (amber_model_from_xcode): its tables
 *  must match the model (AMBER_E_MODEL_MISMATCH names each difference).
 *  Saves write it as Core Data would (new keys above Z_MAX, versions in
 *  Z_OPT, entity numbers, join rows, keyed archives); a decimal that
 *  would not read back as it is (more than 15 significant digits unless a
 *  whole number within 64-bit integers, or
 *  trailing zeros after the point: the store keeps an SQLite number) fails
 *  the save naming the attribute. Saving
 *  to a store that keeps Core Data's persistent history, batch changes,
 *  history and maintenance fail with AMBER_E_UNSUPPORTED
 *  (docs/core-data-stores.md). A file this process may not write opens
 *  read-only.
 *  Errors: AMBER_E_INVALID_URL naming the part that is wrong (an unknown
 *  scheme, a file: URL with a host, a query or bad percent-encoding, text
 *  after "memory:", a schema name that is not a plain lower-case
 *  identifier), nothing created; AMBER_E_SERVER when the server cannot be
 *  reached or refuses (the origin is the SQLSTATE, 08001 for a refused
 *  connection; the message never holds the password); otherwise as
 *  amber_store_open_with_options. Threads: any. */
amber_status amber_store_open_url(amber_store **out, const char *url, amber_model *model, const amber_store_options *options);

/** What opening the store at `path` (or a "postgresql://" URL) with `model` would do to it, without
 *  changing anything: one line per change ("add Book.subtitle", "rename
 *  entity Author to Writer", "Book.cover: re-encode every stored value, from
 *  Color via ColorToData to Color via ColorToDataV2"), separated by '\n'.
 *  *out is NUL-terminated and owned by the caller (amber_free); *out_count
 *  receives the number of lines, 0 (and an empty string) when the store
 *  already has the model's shape. Opening the store migrates it: entities,
 *  attributes and relationships added or removed, renamed through renaming
 *  identifiers, optional to required with a default, integers widened,
 *  indexes and uniqueness constraints, to-one to to-many, derived values
 *  computed, transformed values re-encoded when their chain changes.
 *  The migration is rehearsed on the store's objects and rolled back (it
 *  takes about as long as the migration), so the plan refuses what opening
 *  would refuse, every problem at once.
 *  Errors: AMBER_E_MIGRATION_FAILED naming every change that cannot be
 *  inferred and every object the migration would refuse (the message lists
 *  them), AMBER_E_NOT_A_STORE. Threads: any. */
amber_status amber_store_migration_plan(char **out, size_t *out_count, const char *path, amber_model *model);

/** Opens an existing store with the model it carries, bound against
 *  `registry` (NULL: shared). *out_model (may be NULL) receives a new handle
 *  to that model, owned by the caller (amber_model_free). A store Core Data
 *  wrote opens, for reading, with the model it keeps of itself (its
 *  Z_MODELCACHE, imported as amber_model_from_xcode imports a model);
 *  AMBER_E_NOT_A_STORE when that cache is missing or damaged. */
amber_status amber_store_open_existing(amber_store **out, amber_model **out_model, const char *path,
                                       amber_registry *registry);

/** Copies the store Core Data wrote at `source` into a new Amber store at
 *  `destination`, so an app's data leaves Core Data's layout: every object
 *  and link, keys kept, values exactly as they read from the source, in one
 *  transaction, with each entity's count checked at the end. The source is
 *  only read. `model` is the model the source was made with, or NULL for
 *  the model it keeps of itself (bound against `registry`, NULL: shared);
 *  the new store is made with it. *out_objects (may be NULL) receives how
 *  many objects were copied.
 *  Errors: AMBER_E_EXISTS when something is at `destination`;
 *  AMBER_E_MODEL_MISMATCH naming every difference between the source and
 *  `model`; AMBER_E_NOT_A_STORE for a source that is not a Core Data store
 *  (or whose own model is missing or damaged); AMBER_E_MIGRATION_FAILED
 *  when a count differs. After any failure nothing is left at
 *  `destination`. Threads: any. */
amber_status amber_store_import_coredata(int64_t *out_objects, const char *source, const char *destination, amber_model *model,
                                         amber_registry *registry);

/** Releases the store handle. The database closes once no context uses it:
 *  contexts made from the store keep working, unsaved changes included,
 *  until each is freed (freeing a context discards what it did not save).
 *  The last connection to a file store to close folds the write-ahead log
 *  into the file and removes it, leaving only the store file. This call
 *  first folds the log as far as other connections' readers allow (without
 *  waiting for them), so a disk that refuses is reported.
 *  Errors: AMBER_E_STORAGE when the disk is full or failed while folding the
 *  log: the handle is released all the same, every save is safe in the log
 *  beside the file (keep the two together: a copy of the file alone misses
 *  those saves), and opening and closing the store once the disk has room
 *  folds it. */
amber_status amber_store_close(amber_store *store);

/* ------------------------------------------------------------------------ */
/* Store maintenance                                                        */
/* ------------------------------------------------------------------------ */

/** Checks the store: every page, index and constraint (SQLite's
 *  integrity_check), every link between objects, and Amber's metadata.
 *  Other contexts on this store wait while it reads the whole file.
 *  *out receives one line per problem separated by '\n' (an empty string
 *  when the store is sound), NUL-terminated and owned by the caller
 *  (amber_free); *out_count receives the number of problems. Damage that
 *  stops the check is reported as a problem, not as an error.
 *  Errors: AMBER_E_BUSY, AMBER_E_SQLITE. Threads: any (the store runs one
 *  caller's statements at a time). */
amber_status amber_store_check(char **out, size_t *out_count, amber_store *store);

/** amber_store_check for the store file at `path`, without opening it as a
 *  store: its model is not bound, so a store whose plugins are missing (or
 *  whose metadata is damaged) can be checked. Checking writes nothing to
 *  the store, and leaves no side files where this process may write the
 *  folder; a store it cannot write is read as its opening reads it.
 *  Errors: AMBER_E_NOT_A_STORE if the file is missing or cannot be opened;
 *  AMBER_E_BUSY, AMBER_E_SQLITE if reading it fails (a damaged file or one
 *  that is not a database is reported in *out, not as an error). */
amber_status amber_store_check_file(char **out, size_t *out_count, const char *path);

/** Copies the store, as of its last committed save, into a new file at
 *  `path` with SQLite's online backup API. Saves go on meanwhile: a file
 *  store is read as one snapshot through a connection of its own (only an
 *  in-memory store's saves wait for the copy). The copy is made beside
 *  `path` and renamed into place when whole, so `path` is either absent or
 *  a complete store, which opens like the original (same identifier, same
 *  model).
 *  Errors: AMBER_E_EXISTS if a file is at `path` (or its -wal or -journal):
 *  nothing is written; AMBER_E_SQLITE if the copy fails (the partial file
 *  is removed). Threads: any. */
amber_status amber_store_backup(amber_store *store, const char *path);

/** Rebuilds the store file without the space deleted objects left, and
 *  truncates the write-ahead log so the file shrinks at once (or at a later
 *  checkpoint, if another connection is still reading an older state).
 *  Objects, their IDs and every context's objects are unchanged.
 *  Errors: AMBER_E_BUSY (another connection was writing past the busy
 *  timeout), AMBER_E_SQLITE. Threads: any. */
amber_status amber_store_vacuum(amber_store *store);

/** Copies every save in the write-ahead log into the store file and
 *  truncates the log, so the file alone holds the store (for a file copy
 *  or an archive). Saves already checkpoint as the log grows, and closing
 *  the store removes the log. Does nothing for an in-memory store.
 *  Errors: AMBER_E_BUSY if another connection was still reading an older
 *  state or writing past the busy timeout: the log was copied as far as it
 *  could be, and retrying may finish it. Threads: any. */
amber_status amber_store_checkpoint(amber_store *store);

/* ------------------------------------------------------------------------ */
/* History                                                                  */
/* ------------------------------------------------------------------------ */

/** The token of the last transaction in the store's history, "UUID/sequence"
 *  ("UUID/0" before the first save): pass it to amber_store_history to read
 *  only what is saved from then on, or keep it between runs. *out is
 *  NUL-terminated and owned by the caller (amber_free).
 *  Errors: AMBER_E_UNSUPPORTED for a store that keeps no history.
 *  Threads: any. */
amber_status amber_store_history_token(char **out, amber_store *store);

/** The transactions saved after `after_token` (NULL: every one the history
 *  keeps), oldest first, as one JSON array; *out_count receives the number
 *  of transactions. Each is an object:
 *    {"token": "UUID/7", "timestamp": 812345678.25 (seconds since 2001-01-01 UTC),
 *     "author": "importer" or null, "context": "sync" or null,
 *     "relinked": false (join-table links or ordered positions changed),
 *     "recorded": true (false: saved with history off; "changes" is empty),
 *     "changes": [{"kind": "inserted" | "updated" | "deleted", "entity": "Book",
 *                  "key": 12, "object": "amber://UUID/Book/p12",
 *                  "keys": ["title"] (an update's changed attributes and to-ones),
 *                  "version": 2}, …]}
 *  *out is NUL-terminated UTF-8 owned by the caller (amber_free).
 *  Errors: AMBER_E_HISTORY for a token of another store, one later than the
 *  history, or one whose later transactions were purged; AMBER_E_INVALID_VALUE
 *  for text that is not a token; AMBER_E_UNSUPPORTED. Threads: any. */
amber_status amber_store_history(char **out, size_t *out_count, amber_store *store, const char *after_token);

/** Deletes the transactions up to and including `through_token` from the
 *  history. Reading after an earlier token then fails with AMBER_E_HISTORY,
 *  and contexts in other processes that had not merged them compare their
 *  objects instead.
 *  Errors: AMBER_E_HISTORY for a token of another store or later than the
 *  history; AMBER_E_INVALID_VALUE; AMBER_E_UNSUPPORTED. Threads: any. */
amber_status amber_store_purge_history(amber_store *store, const char *through_token);

/* ------------------------------------------------------------------------ */
/* Contexts                                                                 */
/* ------------------------------------------------------------------------ */

/** A new context over `store`, owned by the calling thread (any thread may
 *  make contexts over one store). Free it with amber_context_free (pending
 *  changes are discarded). */
amber_status amber_context_new(amber_context **out, amber_store *store);

/** Releases the context and every object handle it gave out, discarding
 *  its unsaved changes; later use of any of those handles fails with
 *  AMBER_E_INVALID_HANDLE. Reports and live queries of the context stay
 *  valid to read and free, and give no more objects (AMBER_E_UNAVAILABLE).
 *  Threads: the context's, or any once that thread has ended (a context
 *  its thread left behind is never leaked for good). */
amber_status amber_context_free(amber_context *context);

/** Names the context and who saves through it, recorded with each of its
 *  saves in the store's history ("context" and "author" in
 *  amber_store_history); NULL clears either. The strings are copied.
 *  Errors: AMBER_E_INVALID_UTF8. Threads: the context's. */
amber_status amber_context_set_names(amber_context *context, const char *name, const char *author);

/** Inserts a new object of `entity` with its default values. The object
 *  handle is owned by the context (valid until amber_context_free). */
amber_status amber_context_insert(amber_object **out, amber_context *context, amber_entity *entity);

/** Inserts `row_count` objects of `entity` in one call: `values` holds
 *  row_count rows of attribute_count values, row after row, for `attributes`
 *  (handles of `entity`). All or nothing: if any value is refused, no object
 *  of the batch stays, and the error names the attribute and the row.
 *  `out_objects` may be NULL (no handles made, the fastest path); otherwise it
 *  is an array of row_count the library fills with handles owned by the context. */
amber_status amber_context_insert_many(amber_object **out_objects, amber_context *context, amber_entity *entity,
                                       amber_attribute *const *attributes, size_t attribute_count,
                                       const amber_value *values, size_t row_count);

/** The `type` of an amber_column whose data is an array of row_count
 *  amber_value, each read as amber_object_set reads one: the column form of
 *  amber_context_insert_many, for values no typed column holds (plist-like
 *  values, a mix of types). */
enum { AMBER_COLUMN_VALUES = 64 };

/** The `type` of an amber_column that sets a relationship (its
 *  `relationship`, with `attribute` NULL): `data` is an array of
 *  amber_object * handles of the same context. For a to-one, one handle per
 *  row (NULL: no destination) and no `lengths`; for a to-many, `lengths`
 *  gives each row's member count and `data` holds every row's members one
 *  row after the other, with `data_size` (in bytes) covering them all. The
 *  inverses follow, as amber_object_set_object and amber_object_set_objects
 *  make them follow. */
enum { AMBER_COLUMN_OBJECTS = 65 };

/** One attribute's values (or, with AMBER_COLUMN_OBJECTS, one
 *  relationship's destinations) for amber_context_insert_columns: one
 *  element per row, all of `type`. Start from AMBER_COLUMN_INIT (which sets `size` and
 *  zero-fills the rest) and set what applies; every pointer is borrowed for
 *  the call.
 *
 *  What `data` holds, by `type` (row after row; a row marked in `nulls`
 *  still takes its place, and its element is ignored):
 *    AMBER_VALUE_BOOL      uint8_t, 0 or 1 (anything else is refused)
 *    AMBER_VALUE_INT       int64_t
 *    AMBER_VALUE_DOUBLE    double
 *    AMBER_VALUE_FLOAT     float
 *    AMBER_VALUE_DATE      double: seconds since 1970-01-01 00:00 UTC
 *    AMBER_VALUE_UUID      16 bytes each
 *    AMBER_VALUE_STRING, _DECIMAL, _URI, _OBJECT_ID, _PLIST
 *                          UTF-8 text of every row, one after the other;
 *                          `lengths` gives each row's byte count (a null
 *                          row's is normally 0); they must fit in `data_size`
 *    AMBER_VALUE_BINARY    bytes, with `lengths` and `data_size` as for text
 *    AMBER_VALUE_CUSTOM    values of class `class_name` (NULL: the
 *                          attribute's value class): `element_size` bytes
 *                          each (a struct class's size; the C struct
 *                          itself), or, with element_size 0, `lengths` and
 *                          `data_size` as for text (an opaque class of any size)
 *    AMBER_COLUMN_VALUES   amber_value, each as amber_object_set reads one
 *  The text types are read as amber_value reads them (a decimal's digits, a
 *  URI that must read back as given, an object ID's URI, plist JSON). */
typedef struct amber_column {
    size_t size;                /**< sizeof(amber_column) as the caller was compiled: set by the _INIT */
    amber_attribute *attribute; /**< the attribute the column sets: an attribute of the entity inserted */
    int32_t type;               /**< an AMBER_VALUE_* constant (not NULL), AMBER_COLUMN_VALUES or AMBER_COLUMN_OBJECTS */
    const void *data;           /**< the elements (may be NULL only when there are no bytes to read) */
    const size_t *lengths;      /**< text, binary, custom without element_size: row_count byte counts; else NULL */
    size_t data_size;           /**< bytes readable at `data`: required with `lengths`; else 0 (not checked) or at least row_count elements */
    size_t element_size;        /**< AMBER_VALUE_CUSTOM: bytes per value, or 0 with `lengths` */
    const char *class_name;     /**< AMBER_VALUE_CUSTOM: the values' class, or NULL for the attribute's */
    const uint8_t *nulls;       /**< NULL, or row_count flags: nonzero sets that row's value to nil (a relationship's to none) */
    amber_relationship *relationship; /**< AMBER_COLUMN_OBJECTS: the relationship the column sets (`attribute` NULL); else NULL */
} amber_column;

/** Initializer of amber_column:
 *  `amber_column column = AMBER_COLUMN_INIT; column.attribute = title; …` */
#define AMBER_COLUMN_INIT { sizeof(amber_column), NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL }

/** Inserts `row_count` objects of `entity` in one call from `column_count`
 *  columns, each holding one attribute's values for every row (see
 *  amber_column): amber_context_insert_many for data kept in arrays, with
 *  no amber_value to fill per field. Every value goes through the checks of
 *  amber_object_set, row by row (type, range, value class, struct size;
 *  immediate encoding). All or nothing: if any column or value is refused,
 *  no object of the call stays.
 *
 *  `out_objects` may be NULL (no handles made, the fastest path); otherwise
 *  it is an array of row_count the library fills with handles owned by the
 *  context. Every pointer in `columns` is borrowed for the call only.
 *  Call it on the context's thread.
 *
 *  `columns` is an array of column_count amber_column made with one header:
 *  the first column's `size` is the array's stride.
 *
 *  Relationship columns (AMBER_COLUMN_OBJECTS) are checked as
 *  amber_object_set_object checks a destination before any object is made,
 *  and linked once every value is in. With no attribute column, the
 *  relationship columns alone give the rows.
 *
 *  Errors: AMBER_E_NULL_ARGUMENT (columns, a column's attribute or
 *  relationship, or its data or lengths where needed; a NULL member of a
 *  to-many), AMBER_E_INVALID_VALUE (a column's `size` not
 *  set by AMBER_COLUMN_INIT, an unknown type, lengths or elements beyond
 *  data_size, a Boolean other than 0 or 1, a malformed decimal, URI, object
 *  ID or plist, a value the attribute refuses: out of range, of another
 *  type or class, a struct of another size; a destination of another
 *  entity or context, deleted, or listed twice in a row; both attribute and
 *  relationship set; column_count 0),
 *  AMBER_E_INVALID_UTF8, AMBER_E_NOT_FOUND (an attribute or relationship of another
 *  entity), AMBER_E_TRANSFORMER (immediate encoding), AMBER_E_WRONG_THREAD.
 *  A problem with a column's own fields or bytes is named as
 *  "columns[i] (Entity.attribute)" with the 0-based row where there is one
 *  (origin: Entity.attribute); a value the attribute refuses as
 *  "Entity.attribute in row N", as amber_context_insert_many names it
 *  (origin: the same place). */
amber_status amber_context_insert_columns(amber_object **out_objects, amber_context *context, amber_entity *entity,
                                          const amber_column *columns, size_t column_count, size_t row_count);

/** Marks `object` for deletion at the next save (a new object is dropped). */
amber_status amber_context_delete(amber_context *context, amber_object *object);

/** What to fetch. Start from AMBER_FETCH_REQUEST_INIT (which sets `size`
 *  and zero-fills the rest) and set what applies; pointers are borrowed. */
typedef struct amber_fetch_request {
    size_t size;                  /**< sizeof(amber_fetch_request) as the caller was compiled: set by the _INIT */
    const char *entity;           /**< the entity's name (required unless template_name is set) */
    const char *predicate;        /**< Core Data predicate text, or NULL for all objects */
    const amber_value *arguments; /**< values for %@ and attribute names (strings) for %K, in order */
    size_t argument_count;
    const amber_sort *sort;       /**< sort keys, first key first */
    size_t sort_count;
    int64_t limit;                /**< at most this many; 0 or negative: no limit */
    int64_t offset;               /**< skip this many first */
    const char *const *prefetch;  /**< relationship key paths ("author", "books.tags") read with the objects, one query each; NULL: none */
    size_t prefetch_count;
    int32_t exclude_subentities;  /**< nonzero: only objects of `entity` itself, none of the entities that inherit from it */
    const char *template_name;    /**< NULL, or a template of the context's model to fetch: its entity, predicate, order
                                       and limit. `entity` is then NULL (or the template's) and `predicate` and
                                       `arguments` unset; sort keys, a limit, an offset and prefetching set here
                                       replace the template's. */
    const char *const *variable_names;  /**< the predicate's $VARIABLES (names without the $) ... */
    const amber_value *variable_values; /**< ... and their values, compared as %@ arguments are */
    size_t variable_count;        /**< every variable needs a value, and every value a variable: either mistake fails
                                       with AMBER_E_INVALID_PREDICATE naming it (origin "$NAME") */
    int32_t exclude_pending_changes; /**< nonzero: the store's answer alone (objects as saved, less those deleted in the
                                          context); zero, the default: the context's unsaved changes count, see
                                          amber_context_fetch */
} amber_fetch_request;

/** Initializer of amber_fetch_request:
 *  `amber_fetch_request request = AMBER_FETCH_REQUEST_INIT; request.entity = "Book";` */
#define AMBER_FETCH_REQUEST_INIT { sizeof(amber_fetch_request), NULL, NULL, NULL, 0, NULL, 0, 0, 0, NULL, 0, 0, NULL, NULL, NULL, 0, 0 }

/** Fetches the objects matching `request` as the context sees them: saved
 *  objects with the context's unsaved changes (unless
 *  request->exclude_pending_changes is set), as Core Data fetches. New
 *  objects that match are included; changed objects are judged and sorted
 *  by their current values; deleted ones are left out; then the offset and
 *  limit apply. Objects already in the context come as they are there.
 *  Objects equal on every sort key come in primary-key order, new ones
 *  after saved ones in the order they were inserted. With no unsaved change
 *  of the entity the store answers alone; otherwise the changed objects are
 *  judged in memory, with the answers the store would give; a predicate or
 *  sort key that follows relationships while an object it reaches (or a
 *  relationship's members) changed reads every object of the entity.
 *  *out_objects is an array of *out_count handles owned by the
 *  context; the array itself is the caller's (amber_free). With no match,
 *  *out_objects is NULL and *out_count 0.
 *  Memory: the objects of one fetch share its row storage (every fetched
 *  value, compactly) until each is changed or released; the storage is
 *  freed with the last of them. Release objects you no longer need
 *  (amber_object_release) when keeping a few out of a large fetch.
 *  Errors: AMBER_E_NOT_FOUND (an entity; an attribute or relationship a
 *  predicate names, with origin "position N" and the nearest name),
 *  AMBER_E_INVALID_PREDICATE (the message has the 1-based position), AMBER_E_SQLITE, AMBER_E_INVALID_VALUE
 *  (a stored value another program wrote that would read back changed, such
 *  as text that is not UTF-8; the origin is Entity.attribute). */
amber_status amber_context_fetch(amber_object ***out_objects, size_t *out_count, amber_context *context,
                                 const amber_fetch_request *request);

/** amber_context_fetch, and in the same call the values of `attributes` for
 *  every object fetched: *out_values is an array of *out_count rows of
 *  attribute_count values, row after row, owned by the caller (release it
 *  with amber_values_release(*out_values, *out_count * attribute_count)).
 *  The attributes must belong to the request's entity.
 *  Errors: as amber_context_fetch, and AMBER_E_TRANSFORMER if a value cannot be decoded. */
amber_status amber_context_fetch_values(amber_object ***out_objects, amber_value **out_values, size_t *out_count,
                                        amber_context *context, const amber_fetch_request *request,
                                        amber_attribute *const *attributes, size_t attribute_count);

/** amber_context_fetch_values without a copy per value: the values are
 *  borrowed views into memory the batch owns. Strings, bytes and class names
 *  point into the batch and stay valid until amber_batch_free; nothing is
 *  allocated per value (the batch makes two buffers in all, plus the handle
 *  array if asked for). *out_values is an array of *out_count rows of
 *  attribute_count values, row after row; never pass these values to
 *  amber_value_release. The values of one custom class share one copy of
 *  its name (compare class_name pointers to group them).
 *  `out_objects` may be NULL (no object handles made: the fastest way to read
 *  a large result); otherwise it receives an array of *out_count handles
 *  owned by the context, the array itself owned by the batch.
 *  Errors: as amber_context_fetch_values (attribute_count 0 is
 *  AMBER_E_INVALID_VALUE: use amber_context_fetch for objects alone).
 *  On failure *out is untouched. */
amber_status amber_context_fetch_batch(amber_batch **out, const amber_value **out_values, amber_object *const **out_objects,
                                       size_t *out_count, amber_context *context, const amber_fetch_request *request,
                                       amber_attribute *const *attributes, size_t attribute_count);

/** What a batch update does to one attribute (amber_context_batch_update). */
typedef enum amber_batch_operation {
    AMBER_BATCH_SET = 0,      /**< attribute = value (a constant, checked as amber_object_set checks it) */
    AMBER_BATCH_COPY = 1,     /**< attribute = source (another stored attribute of the same object, of the same type, or an integer into any number) */
    AMBER_BATCH_ADD = 2,      /**< attribute = (source, or the attribute itself if NULL) + value */
    AMBER_BATCH_SUBTRACT = 3, /**< attribute = (source, or the attribute itself if NULL) - value */
    AMBER_BATCH_MULTIPLY = 4  /**< attribute = (source, or the attribute itself if NULL) * value */
} amber_batch_operation;

/** One attribute a batch update sets; handles and the value are borrowed. */
typedef struct amber_batch_assignment {
    amber_attribute *attribute; /**< the attribute to set: a stored, untransformed attribute of the request's entity */
    int32_t operation;          /**< an amber_batch_operation */
    amber_value value;          /**< the constant (SET) or the operand (ADD, SUBTRACT, MULTIPLY); unused for COPY */
    amber_attribute *source;    /**< COPY: the attribute copied; arithmetic: the left operand, NULL for the attribute itself */
} amber_batch_assignment;

/** Sets attributes of every object `request` matches (its entity, predicate,
 *  arguments, order, limit and offset; not its prefetching), in the store,
 *  in one transaction, without loading objects: "price = price * 1.1" is
 *  {price, AMBER_BATCH_MULTIPLY, a decimal 1.1, NULL}. Arithmetic is exact
 *  for integers (an overflow is refused), Doubles and decimals (a result
 *  needing more than 38 digits is refused); other types take constants or
 *  copies. Every object's new value is checked against the attribute's type
 *  and rules before anything is written; uniqueness holds, row versions rise,
 *  derived attributes are computed anew, the history records it. Objects the
 *  context holds are refreshed (keeping values set there); other contexts see
 *  it when they merge, in this process or another.
 *  *out_count (may be NULL) receives the number of objects changed;
 *  *out_ids (may be NULL) their object ID URIs, separated by '\n',
 *  NUL-terminated and owned by the caller (amber_free).
 *  Errors: AMBER_E_INVALID_VALUE naming an attribute a batch cannot set
 *  (transient, derived, computed, transformed, set twice) or a value it
 *  refuses; AMBER_E_NOT_FOUND for an attribute handle of another entity;
 *  AMBER_E_SAVE_FAILED listing each object whose new value breaks a rule, or
 *  the uniqueness constraint the update broke (SQLite checks it row by row,
 *  so a shift of unique values is refused too) (amber_last_error_problems;
 *  nothing written); AMBER_E_OBSERVER when an observer failed (the batch is
 *  written and *out_ids and *out_count are filled); AMBER_E_INVALID_PREDICATE;
 *  AMBER_E_UNSUPPORTED; AMBER_E_BUSY. Threads: the context's. */
amber_status amber_context_batch_update(char **out_ids, size_t *out_count, amber_context *context, const amber_fetch_request *request,
                                        const amber_batch_assignment *assignments, size_t assignment_count);

/** Deletes every object `request` matches, in the store, in one
 *  transaction, without loading objects. Delete rules hold: nullify clears
 *  the links of the objects left (a required inverse refuses the batch);
 *  deny, cascade and no action refuse it while a deleted object still has a
 *  destination; a to-one of another entity without an inverse that points at
 *  a deleted object refuses it too. Objects the context holds leave it
 *  (unless they have changes there). *out_count and *out_ids (each may be
 *  NULL) as amber_context_batch_update, for the deleted objects.
 *  Errors: AMBER_E_SAVE_FAILED naming each relationship that refused
 *  (nothing deleted); AMBER_E_OBSERVER when an observer failed (the batch is
 *  written and the outputs filled); AMBER_E_INVALID_PREDICATE;
 *  AMBER_E_UNSUPPORTED; AMBER_E_BUSY. Threads: the context's. */
amber_status amber_context_batch_delete(char **out_ids, size_t *out_count, amber_context *context, const amber_fetch_request *request);

/** Frees a batch and the memory its values point to. The batch keeps the
 *  fetched objects in their context until then (object handles it listed
 *  stay valid after: they belong to the context). Call it on the context's
 *  thread (else AMBER_E_WRONG_THREAD), or on any once that thread has
 *  ended; it may come after amber_context_free. */
amber_status amber_batch_free(amber_batch *batch);

/** How many objects `request` would fetch (with the context's unsaved
 *  changes unless request->exclude_pending_changes is set). Errors: as amber_context_fetch. */
amber_status amber_context_count(int64_t *out, amber_context *context, const amber_fetch_request *request);

/** The objects of `objects` that request->predicate matches on their
 *  current values (all of them without a predicate), sorted by
 *  request->sort (in their given order otherwise), then cut by
 *  request->offset and request->limit: what amber_context_fetch does to the
 *  objects it judges in memory, for any list of this context's objects, of
 *  any entities. request->entity (or a template's) is not needed; the
 *  predicate and sort keys are checked against each object's entity, and
 *  may read transient attributes. request->prefetch, exclude_subentities
 *  and exclude_pending_changes do not apply.
 *  *out_objects is an array of *out_count handles owned by the context (the
 *  same handles as in `objects`); the array itself is the caller's
 *  (amber_free). With no match, *out_objects is NULL and *out_count 0.
 *  Call it on the context's thread.
 *  Errors: as amber_context_fetch for the predicate and sort keys (with the
 *  position); AMBER_E_NULL_ARGUMENT (objects with object_count > 0, or a
 *  NULL handle, named "objects[i]"); AMBER_E_UNAVAILABLE (an object
 *  of another context); AMBER_E_TRANSFORMER (a value that cannot be decoded). */
amber_status amber_context_filter(amber_object ***out_objects, size_t *out_count, amber_context *context,
                                  amber_object *const *objects, size_t object_count, const amber_fetch_request *request);

/** Writes every pending change in one transaction, all or nothing. An
 *  object whose row another context or process changed or deleted since it
 *  was read is a conflict, settled or reported by the context's merge policy
 *  (amber_context_set_merge_policy).
 *  Errors: AMBER_E_SAVE_FAILED: nothing was written, every pending change is
 *  kept, and the message lists every problem (object, attribute or
 *  constraint, rule or transformer; a conflict with the stored and the local
 *  value of each key that differs); fix the values, or refresh, and save
 *  again. AMBER_E_BUSY: another writer held the store past the busy timeout;
 *  nothing was written, every change is kept, and saving again may succeed. */
amber_status amber_context_save(amber_context *context);

/** Discards every pending change. */
amber_status amber_context_rollback(amber_context *context);

/** *out = 1 if a save would write anything, else 0. */
amber_status amber_context_has_changes(int32_t *out, amber_context *context);

/* Several contexts. Contexts over one store (on any threads), over other
 * stores on the same file, or in other processes see each other's saves
 * through merges: */

/** Merges what other contexts saved since the last merge. Objects this
 *  context holds that they updated are read again, keeping per attribute
 *  every value set here since the last save or rollback (so a value set here
 *  stays set whatever others save meanwhile) and taking the saved value of
 *  every other attribute; what is saved becomes what the next save compares
 *  with. Objects they deleted leave the context (their handles then fail
 *  with AMBER_E_UNAVAILABLE) unless they have changes here; new rows appear
 *  in the next fetch, and observers hear them as inserted (read by key, only
 *  while an observer listens; not for a save of more than 4,096 new
 *  objects). Saves through another connection (another store handle on the
 *  file, another process) are noticed too and merged from the store's
 *  history; only where it is not there (purged, or a writer that keeps
 *  none) is every held object's row version compared. Call it on the
 *  context's thread.
 *  Errors: AMBER_E_SQLITE, AMBER_E_BUSY, AMBER_E_WRONG_THREAD. */
amber_status amber_context_merge_saved_changes(amber_context *context);

/** Waits until others saved something `context` has not merged yet
 *  (another context on the store, another connection, process or host), or
 *  until timeout_ms milliseconds pass (0: looks and returns). *out_changed
 *  is 1 if they had (amber_context_merge_saved_changes then takes it), else
 *  0; at once if they already had. A PostgreSQL store waits for the server's
 *  notice of each save (LISTEN/NOTIFY, on a connection of its own); an
 *  SQLite store looks at its data version every few milliseconds. Call it
 *  on the context's thread, which it blocks.
 *  Errors: AMBER_E_INVALID_VALUE (a negative timeout), AMBER_E_SERVER (the
 *  server went away: the next call listens on a new connection),
 *  AMBER_E_SQLITE, AMBER_E_WRONG_THREAD. */
amber_status amber_context_wait_for_saved_changes(int32_t *out_changed, amber_context *context, int64_t timeout_ms);

/** Reads `object` again from the store. merge_changes 0 drops its pending
 *  value changes; 1 keeps every value set here and takes the rest as saved
 *  (as amber_context_merge_saved_changes does). A deletion mark and transient
 *  values stay. An object whose row was deleted leaves the context unless it
 *  has changes to keep. Errors: AMBER_E_UNAVAILABLE (an object of another
 *  context), AMBER_E_INVALID_VALUE (merge_changes not 0 or 1),
 *  AMBER_E_SQLITE, AMBER_E_WRONG_THREAD. */
amber_status amber_context_refresh(amber_context *context, amber_object *object, int32_t merge_changes);

/** With `enabled` 1, the context merges other contexts' saves (as
 *  amber_context_merge_saved_changes) before each fetch, count, object
 *  lookup and save; a save then keeps every value set here over values
 *  saved meanwhile instead of failing with a conflict, also for a save
 *  another writer makes between that merge and the write (settled so under
 *  the write lock; a row deleted meanwhile that has changes here is still a
 *  conflict under AMBER_MERGE_ERROR). 0 (the default)
 *  merges only when asked. Errors: AMBER_E_INVALID_VALUE (not 0 or 1). */
amber_status amber_context_set_automatic_merging(amber_context *context, int32_t enabled);

/** What a save does with a conflict: an object whose row another context or
 *  process changed or deleted since this context read it. The policies other
 *  than AMBER_MERGE_ERROR decide per key (attribute by attribute, to-one by
 *  to-one) against the row as it is inside the save's transaction; a key only
 *  one side changed keeps that side's value under each of them, and to-many
 *  members added or removed on both sides are all kept. After the save the
 *  object holds exactly what was saved. */
enum {
    /** The save fails with AMBER_E_SAVE_FAILED listing every conflict with
     *  the stored and the local values; nothing is written (the default). */
    AMBER_MERGE_ERROR = 0,
    /** Per key, the stored value wins over the one set here; a deletion, on
     *  either side, wins. */
    AMBER_MERGE_STORE_WINS = 1,
    /** Per key, the value set here wins; the store's other keys are kept.
     *  This context's deletions are carried out; a row deleted in the store
     *  is written again (with its key) from the object. */
    AMBER_MERGE_OBJECT_WINS = 2,
    /** Every key is written as this context has it; deletions as
     *  AMBER_MERGE_OBJECT_WINS. */
    AMBER_MERGE_OVERWRITE = 3
};

/** Sets the context's merge policy (an AMBER_MERGE_ value) for its next
 *  saves. Errors: AMBER_E_INVALID_VALUE (not a policy), AMBER_E_WRONG_THREAD. */
amber_status amber_context_set_merge_policy(amber_context *context, int32_t policy);

/** *out = the context's merge policy (an AMBER_MERGE_ value). */
amber_status amber_context_merge_policy(int32_t *out, amber_context *context);

/* Undo and redo. With undo enabled, every change made through the context
 * is recorded: values set (transformable, transient and extended ones too), inserts,
 * deletions with what their delete rules did, relationship changes and the
 * order of ordered ones. Each call is a group of its own unless a group
 * opened with amber_context_begin_undo_group gathers several. Undo after a
 * save makes the context dirty again with the old values (a saved deletion
 * comes back as a pending insert under its old key); a rollback clears the
 * history. Call these on the context's thread. */

/** Starts recording undo history, keeping at most `levels_limit` groups
 *  (0: no limit); any earlier history is dropped.
 *  Errors: AMBER_E_INVALID_VALUE (a negative limit). */
amber_status amber_context_enable_undo(amber_context *context, int64_t levels_limit);

/** Stops recording and drops the history. */
amber_status amber_context_disable_undo(amber_context *context);

/** Reverts the last group of changes (closing an open group first).
 *  *out_done = 1 if something was undone; 0 if there was nothing to undo
 *  (undo disabled, no history, or past the levels limit): nothing changed.
 *  Errors: AMBER_E_UNAVAILABLE if an object to restore left the context or
 *  lost its key to a newer object (nothing is changed then); AMBER_E_SQLITE. */
amber_status amber_context_undo(int32_t *out_done, amber_context *context);

/** Applies again the last group amber_context_undo reverted; *out_done as
 *  for undo (0 also after a new change, which clears what could be redone). */
amber_status amber_context_redo(int32_t *out_done, amber_context *context);

/** Opens an undo group named `name` (copied; NULL for none, e.g. "Rename"
 *  for an Undo Rename menu item); groups nest, the outermost is recorded.
 *  Errors: AMBER_E_UNAVAILABLE if undo is not enabled. */
amber_status amber_context_begin_undo_group(amber_context *context, const char *name);

/** Closes the group amber_context_begin_undo_group opened.
 *  Errors: AMBER_E_UNAVAILABLE if no group is open. */
amber_status amber_context_end_undo_group(amber_context *context);

/** *out_can_undo and *out_can_redo: 1 if amber_context_undo or
 *  amber_context_redo would do something, else 0 (either may be NULL). */
amber_status amber_context_undo_state(int32_t *out_can_undo, int32_t *out_can_redo, amber_context *context);

/** *out = the name of the group amber_context_undo (`redo` 0) or
 *  amber_context_redo (`redo` 1) would apply, as a NUL-terminated string
 *  the caller frees with amber_free; NULL if it has no name. */
amber_status amber_context_undo_action_name(char **out, amber_context *context, int32_t redo);

/* Observers. After each save that wrote something, each merge of other
 * contexts' saves that changed or removed objects held here, and each
 * refresh that changed an object, the context calls its observers (in the
 * order they were added) with a change report, on the context's thread,
 * after the work is done. A report lists inserted objects, updated objects
 * with the keys (attribute and relationship names) that changed, deleted
 * objects, and refreshed objects (which took values others saved) with their
 * keys. With no observer and no live query, no report is made. */

/** A change report's event. */
enum { AMBER_EVENT_SAVED = 1, AMBER_EVENT_MERGED = 2, AMBER_EVENT_REFRESHED = 3, AMBER_EVENT_PENDING = 4 };

/** A change report's lists. */
enum { AMBER_CHANGES_INSERTED = 1, AMBER_CHANGES_UPDATED = 2, AMBER_CHANGES_DELETED = 3, AMBER_CHANGES_REFRESHED = 4 };

/** A change report: what an event changed, or the pending changes. */
typedef struct amber_changes amber_changes;

/** An observer: return 0, or nonzero to report failure. A failure does not
 *  undo anything and does not stop the other observers; the amber_ call
 *  that made the event (amber_context_save, amber_context_merge_saved_changes,
 *  amber_context_refresh, or a fetch that merged first) then returns
 *  AMBER_E_OBSERVER after doing its work (a fetch then has not fetched: call
 *  it again). `changes` is valid only during the call: do not free it. The
 *  observer may use the context, including adding and removing observers. */
typedef int32_t (*amber_observer_fn)(amber_changes *changes, void *userdata);

/** Adds an observer of `context`; *out_token names it for
 *  amber_context_remove_observer. `userdata_free` (may be NULL) runs exactly
 *  once: right away if this call fails, otherwise when the observer is
 *  removed or the context is freed.
 *  Errors: AMBER_E_NULL_ARGUMENT (fn, out_token), AMBER_E_INVALID_HANDLE (a
 *  freed context), AMBER_E_WRONG_THREAD. */
amber_status amber_context_add_observer(uint64_t *out_token, amber_context *context, amber_observer_fn fn,
                                        void *userdata, amber_userdata_free_fn userdata_free);

/** Removes the observer `token` names (its userdata_free runs now).
 *  Errors: AMBER_E_NOT_FOUND (no such observer, or already removed). */
amber_status amber_context_remove_observer(amber_context *context, uint64_t token);

/** The changes made in `context` and not saved yet, as a report of event
 *  AMBER_EVENT_PENDING owned by the caller (amber_changes_free). */
amber_status amber_context_pending_changes(amber_changes **out, amber_context *context);

/** *out_event = the report's AMBER_EVENT_ value. */
amber_status amber_changes_event(int32_t *out_event, amber_changes *changes);

/** *out_count = the number of objects in list `list` (an AMBER_CHANGES_ value). */
amber_status amber_changes_count(size_t *out_count, amber_changes *changes, int32_t list);

/** *out = the handle of object `index` of list `list`, owned by the context.
 *  A deleted object that was saved has left the context: its ID is still
 *  readable. Errors: AMBER_E_INVALID_VALUE (list or index out of range). */
amber_status amber_changes_object(amber_object **out, amber_changes *changes, int32_t list, size_t index);

/** The keys that changed for object `index` of list AMBER_CHANGES_UPDATED or
 *  AMBER_CHANGES_REFRESHED: *out_keys is an array of *out_count
 *  NUL-terminated names, owned by `changes` (valid until it is freed or its
 *  observer returns); other lists have none (*out_count 0, *out_keys NULL). */
amber_status amber_changes_keys(const char *const **out_keys, size_t *out_count, amber_changes *changes,
                                int32_t list, size_t index);

/** Frees a report from amber_context_pending_changes. A report passed to an
 *  observer is the context's: freeing it is AMBER_E_INVALID_VALUE. Threads:
 *  the context's, or any once that thread has ended. */
amber_status amber_changes_free(amber_changes *changes);

/* Live queries. A live query holds the results of a fetch request and
 * follows its context: after each save, merge and refresh of the context,
 * and each amber_context_process_pending_changes, its results are brought
 * up to date and its callback gets the changes as index changes. The
 * results are what amber_context_fetch returns for the request: unsaved
 * changes made in the context show at the next of those calls, unless the
 * request sets exclude_pending_changes (then the results follow what is
 * saved). A change costs what it touches, not the size of the results
 * (see the Swift LiveQuery documentation for when the request is evaluated
 * again in full). Results are optionally in sections by the request's first
 * sort key (dates grouped by year, month or day, in UTC). Call these on the
 * context's thread. */

/** How amber_live_query_options.section_unit groups dates. */
enum { AMBER_UNIT_NONE = 0, AMBER_UNIT_YEAR = 1, AMBER_UNIT_MONTH = 2, AMBER_UNIT_DAY = 3 };

/** Options of a live query. */
typedef struct amber_live_query_options {
    size_t size;              /**< sizeof(amber_live_query_options) */
    const char *section_key;  /**< sections by this attribute, the request's first sort key; NULL: one section */
    int32_t section_unit;     /**< an AMBER_UNIT_ value: how a date section key is grouped */
} amber_live_query_options;

/** `amber_live_query_options options = AMBER_LIVE_QUERY_OPTIONS_INIT;` */
#define AMBER_LIVE_QUERY_OPTIONS_INIT { sizeof(amber_live_query_options), NULL, AMBER_UNIT_NONE }

/** The kinds of amber_index_change. */
enum {
    AMBER_INDEX_SECTION_DELETE = 1, /**< old_section was removed */
    AMBER_INDEX_SECTION_INSERT = 2, /**< new_section was added */
    AMBER_INDEX_DELETE = 3,         /**< the row at old_section/old_row left */
    AMBER_INDEX_INSERT = 4,         /**< a row joined at new_section/new_row */
    AMBER_INDEX_MOVE = 5,           /**< a row's sort values changed: from old_* to new_* (maybe the same) */
    AMBER_INDEX_UPDATE = 6          /**< the row at new_section/new_row changed in place */
};

/** One index change; fields that do not apply are -1. To apply a list of
 *  them to a copy of the old results: remove the rows of DELETE and the old
 *  rows of MOVE (from the last position to the first), then the sections of
 *  SECTION_DELETE (last first); insert the sections of SECTION_INSERT (first
 *  first), then the rows of INSERT and the new rows of MOVE (first first). */
typedef struct amber_index_change {
    int32_t kind;
    int64_t old_section, old_row;
    int64_t new_section, new_row;
} amber_index_change;

/** A live query's callback: `changes` (count >= 1) is valid only during the
 *  call. Return 0, or nonzero to report failure (as for amber_observer_fn). */
typedef int32_t (*amber_live_query_fn)(amber_live_query *query, const amber_index_change *changes, size_t count,
                                       void *userdata);

/** A live query of `request` in `context`, with its results read now.
 *  `options` may be NULL; `fn` may be NULL (read the results when you
 *  like). `userdata_free` (may be NULL) runs exactly once: right away if
 *  this call fails, otherwise at amber_live_query_free. Free the live query
 *  before its context; one whose context was freed keeps its results and
 *  reports no more changes.
 *  Errors: as amber_context_fetch; AMBER_E_INVALID_VALUE (a section key that
 *  is not the first sort key, a unit for a key that is not a date). */
amber_status amber_live_query_new(amber_live_query **out, amber_context *context, const amber_fetch_request *request,
                                  const amber_live_query_options *options, amber_live_query_fn fn, void *userdata,
                                  amber_userdata_free_fn userdata_free);

/** *out_count = the number of results; *out_sections (may be NULL) = the
 *  number of sections (1 without a section key, even with no results). */
amber_status amber_live_query_count(size_t *out_count, size_t *out_sections, amber_live_query *query);

/** *out = the handle (owned by the context) of result `index` in order, or,
 *  with `section` >= 0, of row `index` of that section.
 *  Errors: AMBER_E_INVALID_VALUE (out of range). */
amber_status amber_live_query_object(amber_object **out, amber_live_query *query, int64_t section, size_t index);

/** Section `section`: *out_start (may be NULL) = the index of its first
 *  result, *out_count (may be NULL) = its number of results, and *out_value
 *  (may be NULL) = the value its results share (a date grouped by a unit is
 *  the first instant of its year, month or day; null without a section
 *  key), which the caller releases with amber_value_release.
 *  Errors: AMBER_E_INVALID_VALUE (out of range). */
amber_status amber_live_query_section(size_t *out_start, size_t *out_count, amber_value *out_value,
                                      amber_live_query *query, size_t section);

/** Evaluates the request again in full and reports what differs (for
 *  changes made behind the store's back). Errors: as amber_context_fetch. */
amber_status amber_live_query_refetch(amber_live_query *query);

/** Brings the live queries of `context` that include pending changes up
 *  to date with the changes made in it since they last looked (sets,
 *  inserts, deletions, undo, redo, rollback), calling their callbacks with
 *  what moved. A save, a merge and a refresh do this too; call it after a
 *  batch of edits a list should show before they are saved. Observers are
 *  not called. Threads: the context's.
 *  Errors: AMBER_E_OBSERVER (a callback failed, after every live query was
 *  brought up to date; origin "pending"); an error reading a value or a row. */
amber_status amber_context_process_pending_changes(amber_context *context);

/** Stops following and releases the live query; its userdata_free runs now.
 *  Threads: the context's, or any once that thread has ended. */
amber_status amber_live_query_free(amber_live_query *query);

/** Which pending objects amber_context_pending_objects lists. */
enum { AMBER_PENDING_INSERTED = 1, AMBER_PENDING_UPDATED = 2, AMBER_PENDING_DELETED = 3 };

/** The inserted, updated or deleted objects (`kind`), in the order they were
 *  first touched; the array is the caller's (amber_free), the handles the
 *  context's. With none, *out_objects is NULL and *out_count 0. */
amber_status amber_context_pending_objects(amber_object ***out_objects, size_t *out_count, amber_context *context,
                                           int32_t kind);

/** The object whose ID has the URI form `uri` (NUL-terminated): the one in
 *  this context, or else fetched from the store. Errors: AMBER_E_NOT_FOUND. */
amber_status amber_context_object_with_uri(amber_object **out, amber_context *context, const char *uri);

/* ------------------------------------------------------------------------ */
/* Model logic in code                                                      */
/* ------------------------------------------------------------------------ */

/* Validators and lifecycle hooks per entity, as Core Data keeps them in
 * managed object classes. Set on a model with amber_model_set_logic, they
 * run in every context on the model, on the thread of the context doing the
 * work, and for the objects of the entities below the entity that have no
 * logic of their own. Every callback gets a handle of the object owned by
 * its context (do not release it; it stays valid like a handle from
 * amber_changes_object) and may use the context: read and set values,
 * insert, fetch. Validators only check: one that inserts, deletes or
 * changes an object the save had not listed fails the save with
 * AMBER_E_HOOK (make changes in will_save). A save from inside a callback
 * fails with AMBER_E_HOOK; do not roll back or free the context there.
 *
 * Validators report problems with amber_problems_add: a save lists them
 * with every other problem it finds (AMBER_E_SAVE_FAILED, rule
 * "validation"). A validator, will_save or prepare_for_deletion that
 * returns nonzero stops the save (or the deletion) at once with
 * AMBER_E_HOOK, its origin the hook's name and its message what the
 * callback passed to amber_logic_error; nothing is written or marked
 * deleted, and every pending change stays (those earlier callbacks made
 * too). */

/** What a save does to an object, for amber_object_logic.validate. */
enum { AMBER_CHANGE_INSERT = 1, AMBER_CHANGE_UPDATE = 2, AMBER_CHANGE_DELETE = 3 };

/** Where a validator reports problems; valid only during the validator's call. */
typedef struct amber_problems amber_problems;

/** The callbacks of one entity. Any may be NULL. Start from
 *  AMBER_OBJECT_LOGIC_INIT, so fields added later start NULL. */
typedef struct amber_object_logic {
    /** AMBER_OBJECT_LOGIC_VERSION: the fields this caller knows. */
    uint32_t version;
    /** After the object was inserted, before the caller sets its values. */
    void (*awake_from_insert)(amber_object *object, void *userdata);
    /** After the object first read its saved values in its context (a fetch, or a fault given its row). */
    void (*awake_from_fetch)(amber_object *object, void *userdata);
    /** At a save, checks attribute `key`'s `value` (every attribute of a
     *  new object, those set since the last save of a changed one); `value`
     *  and `key` are valid during the call. Report problems; return 0, or
     *  nonzero to fail the save. */
    int32_t (*validate_value)(amber_problems *problems, amber_object *object, const char *key,
                              const amber_value *value, void *userdata);
    /** Checks the object as a whole before a save makes `change` (an AMBER_CHANGE_ value). */
    int32_t (*validate)(amber_problems *problems, amber_object *object, int32_t change, void *userdata);
    /** At the start of a save that inserts, updates or deletes the object:
     *  changes made here, to any object, are saved in the same transaction
     *  (and objects they touch get will_save too). */
    int32_t (*will_save)(amber_object *object, void *userdata);
    /** After a save wrote the object. A deleted object has left its context
     *  by then: its ID is readable, its values are not. */
    void (*did_save)(amber_object *object, void *userdata);
    /** When the object is deleted, before its delete rules apply (for every
     *  object the deletion cascades to, before any is marked): nonzero
     *  refuses the deletion, and nothing is deleted. */
    int32_t (*prepare_for_deletion)(amber_object *object, void *userdata);
    /** When the object's values are dropped: amber_context_refresh without
     *  keeping changes, a rollback of its changes or its insert, or a save
     *  that deleted it. */
    void (*did_turn_into_fault)(amber_object *object, void *userdata);
} amber_object_logic;

#define AMBER_OBJECT_LOGIC_VERSION 1
#define AMBER_OBJECT_LOGIC_INIT {AMBER_OBJECT_LOGIC_VERSION, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}

/** Gives `entity`'s objects the callbacks in `logic` (copied), or with
 *  `logic` NULL removes the entity's logic. `userdata` goes to every
 *  callback; `userdata_free` (may be NULL) runs exactly once: right away if
 *  this call fails, otherwise when the logic is replaced or removed and no
 *  context is running it, or the model goes away.
 *  Errors: AMBER_E_NULL_ARGUMENT (model, entity), AMBER_E_INVALID_VALUE (a
 *  version this library does not know), AMBER_E_NOT_FOUND (an entity of
 *  another model). Threads: any; contexts working meanwhile see the new
 *  logic from their next call. */
amber_status amber_model_set_logic(amber_model *model, amber_entity *entity, const amber_object_logic *logic,
                                   void *userdata, amber_userdata_free_fn userdata_free);

/** Reports a problem: with attribute or relationship `key`, or (NULL) with
 *  the whole object (in validate_value: with the attribute checked).
 *  Strings are copied. Errors: AMBER_E_NULL_ARGUMENT (message),
 *  AMBER_E_INVALID_UTF8, AMBER_E_INVALID_HANDLE (a report after its
 *  validator returned). */
amber_status amber_problems_add(amber_problems *problems, const char *key, const char *message);

/** Called from a validator, will_save or prepare_for_deletion about to
 *  return nonzero: `message` (copied) becomes the error's message. Affects
 *  only the calling thread's current call. */
void amber_logic_error(const char *message);

/* ------------------------------------------------------------------------ */
/* Objects                                                                  */
/* ------------------------------------------------------------------------ */

/** The current value of `attribute` (transformed values are decoded, lazily
 *  unless the attribute decodes at fetch). *out is owned by the caller:
 *  release it with amber_value_release.
 *  Errors: AMBER_E_WRONG_HANDLE_TYPE / AMBER_E_NOT_FOUND for an attribute of
 *  another entity, AMBER_E_TRANSFORMER if the stored form cannot be decoded. */
amber_status amber_object_get(amber_value *out, amber_object *object, amber_attribute *attribute);

/** amber_object_get by attribute name (resolved on every call: prefer handles in loops).
 *
 *  For an object of an extensible entity, a name the model does not know is
 *  an extended attribute: *out is its value, or AMBER_VALUE_NULL if the
 *  object has none. Errors: AMBER_E_NOT_FOUND (an unknown name, for other
 *  entities); AMBER_E_INVALID_VALUE (a name that is not an identifier or
 *  clashes, case-insensitively, with a modelled attribute or relationship;
 *  extended attributes stored by another tool that cannot be read). */
amber_status amber_object_get_named(amber_value *out, amber_object *object, const char *attribute);

/** Sets `attribute` to `*value` (copied). On any error nothing changes.
 *  Errors: AMBER_E_INVALID_VALUE (the message names the attribute, the
 *  expected type or class and the given value), AMBER_E_INVALID_UTF8,
 *  AMBER_E_TRANSFORMER (immediate encoding), AMBER_E_UNAVAILABLE. */
amber_status amber_object_set(amber_object *object, amber_attribute *attribute, const amber_value *value);

/** amber_object_set by attribute name.
 *
 *  For an object of an extensible entity, a name the model does not know is
 *  an extended attribute, set like any attribute: tracked per key (changes,
 *  undo, merges), stored with the object, usable in predicates and sort keys
 *  (`shelf == 'B2'`). An AMBER_VALUE_NULL value removes it. It takes
 *  property-list values (Boolean, integer, double, float, string, binary,
 *  date, UUID, and plist JSON arrays and dictionaries of these), decimals and
 *  URIs, and reads them back exactly (arrays and dictionaries cross this API
 *  as AMBER_VALUE_PLIST JSON); anything else (an object ID, a custom value) fails
 *  with AMBER_E_INVALID_VALUE naming `Entity.key`, as do names that are not
 *  identifiers or clash with a modelled attribute or relationship of the
 *  entity's hierarchy. On any error nothing changes. */
amber_status amber_object_set_named(amber_object *object, const char *attribute, const amber_value *value);

/** *out = the keys of the object's extended attributes, sorted, as one
 *  buffer of NUL-terminated names one after another (the caller frees it
 *  with amber_free), *out_count = how many; *out is NULL when there are none
 *  (and for entities that are not extensible).
 *  Errors: AMBER_E_INVALID_VALUE (stored extended attributes that cannot be read). */
amber_status amber_object_extended_keys(char **out, size_t *out_count, amber_object *object);

/** The object's ID in URI form (amber://<store>/<Entity>/p<key>, or …/t<n>
 *  until first saved). *out is NUL-terminated and the caller's (amber_free). */
amber_status amber_object_uri(char **out, size_t *out_length, amber_object *object);

/** The object's entity (a handle owned by the store's model). */
amber_status amber_object_entity(amber_entity **out, amber_object *object);

/** The context the object handle belongs to (not a new handle: do not free
 *  it twice). Useful in model logic callbacks, which get objects only. */
amber_status amber_object_context(amber_context **out, amber_object *object);

/** Change state flags of amber_object_state. */
enum { AMBER_OBJECT_INSERTED = 1, AMBER_OBJECT_UPDATED = 2, AMBER_OBJECT_DELETED = 4, AMBER_OBJECT_TEMPORARY_ID = 8 };

/** *out receives AMBER_OBJECT_* flags, or-ed. */
amber_status amber_object_state(uint32_t *out, amber_object *object);

/** The object's primary key, the integer its URI ends with (…/p42 → 42),
 *  stable once the object is saved.
 *  Errors: AMBER_E_UNAVAILABLE for an object not saved yet (a temporary ID). */
amber_status amber_object_primary_key(int64_t *out, amber_object *object);

/** Releases the caller's handle to `object`. The object itself stays in its
 *  context while it has pending changes (they are saved or rolled back as
 *  usual); an unchanged object nobody else holds is freed. Later uses of the
 *  handle fail with AMBER_E_INVALID_HANDLE; fetching the object again gives
 *  a new handle. Release the handles of a large fetch as you go, so memory
 *  stays flat (amber_context_free releases whatever is left).
 *  Errors: AMBER_E_INVALID_HANDLE, AMBER_E_WRONG_THREAD. Call it on the
 *  context's thread. */
amber_status amber_object_release(amber_object *object);

/** amber_object_release for `count` handles, as after a batch
 *  (amber_context_fetch): NULL entries are skipped. All or nothing: if any
 *  handle is not a live object handle of the calling thread, none is
 *  released and the error names its index. */
amber_status amber_objects_release(amber_object *const *objects, size_t count);

/* ---- Relationships ------------------------------------------------------
 * Objects point at objects through relationships. Setting one side updates
 * the inverse in memory at once; saves write both. Every call here takes
 * object handles of one context, on its thread (AMBER_E_WRONG_THREAD
 * otherwise). Objects returned are handles like amber_context_fetch's: the
 * same handle for the same object, released with amber_object_release. A
 * saved object not read yet comes back as a fault whose row is read on its
 * first use (which may then fail with AMBER_E_UNAVAILABLE if another
 * program deleted it). */

/** The object to-one `relationship` of `object` points at; *out is NULL if
 *  none. Errors: AMBER_E_NOT_FOUND (a relationship of another entity),
 *  AMBER_E_INVALID_VALUE (a to-many relationship), AMBER_E_UNAVAILABLE. */
amber_status amber_object_get_object(amber_object **out, amber_object *object, amber_relationship *relationship);

/** Points to-one `relationship` of `object` at `destination` (NULL: at
 *  nothing); the inverse follows. Errors: AMBER_E_INVALID_VALUE naming the
 *  relationship for a destination of the wrong entity, of another context
 *  or deleted (nothing changes); AMBER_E_UNAVAILABLE if `object` is deleted. */
amber_status amber_object_set_object(amber_object *object, amber_relationship *relationship, amber_object *destination);

/** The number of members of to-many `relationship`, pending changes
 *  included; when the members are not loaded yet, counted in the store
 *  without loading them. */
amber_status amber_object_count_objects(size_t *out, amber_object *object, amber_relationship *relationship);

/** The members of to-many `relationship` (in order, for an ordered one),
 *  pending changes included: a malloc'd array of `*out_count` handles (NULL
 *  when empty) for the caller to amber_free; the handles as described above. */
amber_status amber_object_objects(amber_object ***out_objects, size_t *out_count, amber_object *object,
                                  amber_relationship *relationship);

/** Adds `member` to to-many `relationship` of `object` (last, if ordered;
 *  nothing if it is a member already); the inverse follows. Errors as
 *  amber_object_set_object. */
amber_status amber_object_add_object(amber_object *object, amber_relationship *relationship, amber_object *member);

/** Removes `member` from to-many `relationship` of `object` (nothing if it
 *  is not a member); the inverse follows. */
amber_status amber_object_remove_object(amber_object *object, amber_relationship *relationship, amber_object *member);

/** Makes the `count` objects of `members` the members of to-many
 *  `relationship` of `object`, in that order for an ordered one (this is how
 *  an ordered relationship is reordered): the others leave, the inverses
 *  follow. All or nothing: a member of the wrong entity, of another
 *  context, deleted or listed twice fails with AMBER_E_INVALID_VALUE and
 *  changes nothing. `members` is borrowed for the call (NULL when count is 0). */
amber_status amber_object_set_objects(amber_object *object, amber_relationship *relationship, amber_object *const *members,
                                      size_t count);

/** The objects of fetched property `name` of `object`: a read-only property
 *  the model declares (a JSON model's "fetchedProperties", an Xcode model's
 *  <fetchedProperty>) whose value is a fetch of another entity, its
 *  predicate reading $FETCH_SOURCE as `object` (and $FETCH_SOURCE.path as
 *  its value there) and $FETCHED_PROPERTY.userInfo.KEY as the property's
 *  user info. Fetched in the object's context when first read, then kept
 *  until amber_context_refresh refreshes the object. A malloc'd array of
 *  `*out_count` handles (NULL when empty) for the caller to amber_free; the
 *  handles are owned by the context. Errors: AMBER_E_NOT_FOUND naming
 *  "Entity.name" when the entity has no such fetched property (with the
 *  nearest name); AMBER_E_UNAVAILABLE for an object without a context;
 *  otherwise as amber_context_fetch. Threads: the context's. */
amber_status amber_object_fetched_objects(amber_object ***out_objects, size_t *out_count, amber_object *object, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* AMBER_H */
