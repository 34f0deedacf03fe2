#include <ffi.h>

/* libffi's scalar type descriptors are mutable globals, which Swift 6 will not
 * touch directly; these accessors hand out their addresses. libffi only reads
 * them when laying out a struct. */
static inline ffi_type *amber_ffi_sint8(void) { return &ffi_type_sint8; }
static inline ffi_type *amber_ffi_sint16(void) { return &ffi_type_sint16; }
static inline ffi_type *amber_ffi_sint32(void) { return &ffi_type_sint32; }
static inline ffi_type *amber_ffi_sint64(void) { return &ffi_type_sint64; }
static inline ffi_type *amber_ffi_uint8(void) { return &ffi_type_uint8; }
static inline ffi_type *amber_ffi_uint16(void) { return &ffi_type_uint16; }
static inline ffi_type *amber_ffi_uint32(void) { return &ffi_type_uint32; }
static inline ffi_type *amber_ffi_uint64(void) { return &ffi_type_uint64; }
static inline ffi_type *amber_ffi_float(void) { return &ffi_type_float; }
static inline ffi_type *amber_ffi_double(void) { return &ffi_type_double; }
