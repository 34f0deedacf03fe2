/// The bytes of a fetch's texts and blobs, one after another, at an
/// address that does not move once the store has filled it: readers borrow
/// a value's bytes without a copy, a closure or a reference count. Grows by
/// doubling while a store appends.
package final class ByteArena: @unchecked Sendable {
    // One filler at a time, then readers only: no dynamic exclusivity checks
    // (they cost more than the copy of a short text).
    @exclusivity(unchecked) private var base: UnsafeMutableRawPointer?
    /// How many bytes it holds.
    @exclusivity(unchecked) package private(set) var count = 0
    @exclusivity(unchecked) private var capacity = 0

    /// An empty arena (allocates nothing until the first append).
    package init() {}

    deinit { base?.deallocate() }

    /// Appends `bytes`; returns the offset they start at.
    @discardableResult
    package func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        let offset = count
        guard let source = bytes.baseAddress, let target = reserve(bytes.count) else { return offset }
        target.copyMemory(from: source, byteCount: bytes.count)
        return offset
    }

    /// Appends `bytes` (a collection that may not be contiguous); returns the offset they start at.
    @discardableResult
    package func append(contentsOf bytes: some Collection<UInt8>) -> Int {
        let offset = count
        if let done = bytes.withContiguousStorageIfAvailable({ append(UnsafeRawBufferPointer($0)) }) { return done }
        guard let target = reserve(bytes.count) else { return offset }
        for (index, byte) in bytes.enumerated() { target.storeBytes(of: byte, toByteOffset: index, as: UInt8.self) }
        return offset
    }

    /// Makes room for `length` more bytes at the end, counts them, and
    /// returns where they go (nil for none).
    private func reserve(_ length: Int) -> UnsafeMutableRawPointer? {
        guard length > 0 else { return nil }
        if count + length > capacity {
            let grown = Swift.max(count + length, capacity * 2, 256)
            let memory = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
            if let base {
                memory.copyMemory(from: base, byteCount: count)
                base.deallocate()
            }
            (base, capacity) = (memory, grown)
        }
        defer { count += length }
        return base.map { $0 + count }
    }

    /// Forgets every byte, keeping the memory (for an arena reused per row).
    package func removeAll() { count = 0 }

    /// Borrows `length` bytes from `offset`: valid while the arena lives and
    /// nothing is appended (a fetch's arena is never appended to once read).
    @inline(__always)
    package func bytes(at offset: Int, count length: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base.map { $0 + offset }, count: length)
    }
}
