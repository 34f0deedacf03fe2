/// Reads a C struct that can grow (a plugin's descriptor, a caller's request):
/// the first `byteCount` bytes at `raw` laid over `zero`. Fields past either
/// side's size are not read: a shorter struct (an earlier version) leaves the
/// newer fields at zero, a longer one (a later version) has its extra fields
/// ignored here; callers decide whether those may be set.
package func readGrowingStruct<T>(_ raw: UnsafeRawPointer, byteCount: Int, over zero: T) -> T {
    var result = zero
    withUnsafeMutableBytes(of: &result) { target in
        target.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: min(max(byteCount, 0), target.count)))
    }
    return result
}
