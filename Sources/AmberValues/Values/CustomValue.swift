import Foundation

/// A value of a custom value class: the class's name and the value's bytes.
/// For a struct class the bytes are the C struct exactly as the platform's C
/// compiler lays it out (``StructClass/size`` bytes).
///
/// Values of up to 16 bytes (a colour of four floats, a point, a small
/// rectangle) are kept inline, so making one allocates nothing for its bytes;
/// `Data` would allocate beyond 14.
public struct CustomValue: Sendable, Hashable {
    /// The value class's name.
    public let className: String
    @usableFromInline let storage: Storage

    @usableFromInline enum Storage: Sendable {
        case inline(UInt64, UInt64, count: UInt8)
        case data(Data)
    }

    /// The most bytes kept inline.
    private static let inlineCapacity = 16

    /// A value of class `className` holding `bytes` (checked against the class when used).
    public init(className: String, bytes: Data) {
        self.className = className
        if bytes.count <= Self.inlineCapacity {
            storage = bytes.withUnsafeBytes { Self.inline($0) }
        } else {
            storage = .data(bytes)
        }
    }

    /// A value of class `className` holding a copy of `bytes`.
    public init(className: String, copying bytes: UnsafeRawBufferPointer) {
        self.className = className
        storage = bytes.count <= Self.inlineCapacity ? Self.inline(bytes) : .data(Data(bytes))
    }

    private static func inline(_ bytes: UnsafeRawBufferPointer) -> Storage {
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { target in
            if let base = bytes.baseAddress { target.baseAddress?.copyMemory(from: base, byteCount: bytes.count) }
        }
        return .inline(words.0, words.1, count: UInt8(bytes.count))
    }

    /// The raw bytes (a copy for inline values; prefer ``withUnsafeBytes(_:)`` on hot paths).
    public var bytes: Data {
        switch storage {
        case .data(let data): data
        case .inline: withUnsafeBytes { Data($0) }
        }
    }

    /// How many bytes the value has.
    public var count: Int {
        switch storage {
        case .inline(_, _, let count): Int(count)
        case .data(let data): data.count
        }
    }

    /// Calls `body` with the value's bytes, valid only during the call.
    /// Inlinable, so callers in other modules get it specialized (a generic
    /// call would look up type metadata on every call).
    @inlinable
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch storage {
        case .inline(let first, let second, let count):
            // Borrowed, not `inout` on a local copy: Swift 6.3's optimizer drops the
            // stores to such a copy when this is inlined into another module's loop
            // (the body then reads stale stack bytes; the benchmark's W5 check, built for release, shows it).
            return try Swift.withUnsafeBytes(of: (first, second)) { (raw) throws(E) -> R in
                try body(UnsafeRawBufferPointer(rebasing: raw[..<Int(count)]))
            }
        case .data(let data):
            // Data's withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
            let result = data.withUnsafeBytes { raw in Result { () throws(E) -> R in try body(raw) } }
            return try result.get()
        }
    }

    public static func == (lhs: CustomValue, rhs: CustomValue) -> Bool {
        guard lhs.className == rhs.className, lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { left in rhs.withUnsafeBytes { right in left.elementsEqual(right) } }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(className)
        withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
