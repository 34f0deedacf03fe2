import AmberValues
import Foundation

/// The default transformer: plist-like values ↔ a compact, versioned binary archive.
/// It also reads what Core Data's secure unarchiver stores (``KeyedArchive``),
/// so a transformable attribute of an imported model reads from a store Core
/// Data wrote; it always writes its own format.
///
/// Format (all integers little-endian; lengths and counts are unsigned LEB128):
///
///     archive := "AMBR" version:u8(=1) value
///     value   := tag:u8 payload
///       0 null | 1 false | 2 true
///       3 integer  zigzag LEB128
///       4 double   8 bytes (IEEE 754 bits)     5 float  4 bytes
///       6 string   length, UTF-8 bytes         7 binary length, bytes
///       8 date     8 bytes: seconds since 2001-01-01 UTC as IEEE 754 bits
///       9 uuid     16 bytes
///      10 array    count, values
///      11 dictionary count, (key: length, UTF-8 bytes; value) sorted by key
///
/// Decoding trusts nothing: every length and count is checked against the
/// bytes that remain before anything is read or allocated, nesting is
/// limited, strings must be valid UTF-8, keys unique, and no byte may follow
/// the value. Anything else is an error, never a crash.
package enum PropertyListArchive {
    static let magic: [UInt8] = Array("AMBR".utf8)
    static let version: UInt8 = 1
    /// Deeper nesting is refused, so hostile input cannot exhaust the stack.
    static let maximumDepth = 64

    static let transformer = Transformer(
        name: Registry.archiveTransformerName, from: ValueClass.propertyListName, to: ValueClass.binary.rawValue,
        source: "built-in",
        forward: { value in
            if value.isNull { return .null }
            return .binary(try encode(value))
        },
        reverse: { value in
            guard case .binary(let data) = value else { return .null }
            // What Core Data's secure unarchiver stored (a store Core Data wrote) reads as the same values.
            if KeyedArchive.looksLikeOne(data) { return try KeyedArchive(data).rootValue() }
            return try decode(data)
        })

    package struct ArchiveError: Error, CustomStringConvertible {
        let message: String
        let offset: Int
        package var description: String { "archive byte \(offset): \(message)" }
    }

    enum Tag: UInt8 {
        case null = 0, falseValue, trueValue, integer, double, float, string, binary, date, uuid, array, dictionary
    }

    // MARK: Encoding

    package static func encode(_ value: Value) throws(ArchiveError) -> Data {
        var out = magic
        out.append(version)
        try write(value, to: &out, depth: 0)
        return Data(out)
    }

    private static func write(_ value: Value, to out: inout [UInt8], depth: Int) throws(ArchiveError) {
        guard depth < maximumDepth else { throw ArchiveError(message: "nested deeper than \(maximumDepth) levels", offset: out.count) }
        switch value {
        case .null: out.append(Tag.null.rawValue)
        case .bool(let b): out.append(b ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
        case .int(let i):
            out.append(Tag.integer.rawValue)
            writeVarint(UInt64(bitPattern: (i << 1) ^ (i >> 63)), to: &out)
        case .double(let d):
            out.append(Tag.double.rawValue)
            withUnsafeBytes(of: d.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .float(let f):
            out.append(Tag.float.rawValue)
            withUnsafeBytes(of: f.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .string(let s):
            out.append(Tag.string.rawValue)
            writeBytes(Array(s.utf8), to: &out)
        case .binary(let d):
            out.append(Tag.binary.rawValue)
            writeBytes(Array(d), to: &out)
        case .date(let d):
            out.append(Tag.date.rawValue)
            withUnsafeBytes(of: d.timeIntervalSinceReferenceDate.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .uuid(let u):
            out.append(Tag.uuid.rawValue)
            withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
        case .array(let items):
            out.append(Tag.array.rawValue)
            writeVarint(UInt64(items.count), to: &out)
            for item in items { try write(item, to: &out, depth: depth + 1) }
        case .dictionary(let items):
            out.append(Tag.dictionary.rawValue)
            writeVarint(UInt64(items.count), to: &out)
            // Sorted keys: equal dictionaries archive to equal bytes.
            for (key, item) in items.sorted(by: { $0.key < $1.key }) {
                writeBytes(Array(key.utf8), to: &out)
                try write(item, to: &out, depth: depth + 1)
            }
        case .decimal, .uri, .objectID, .custom:
            throw ArchiveError(message: "\(value.className) is not plist-like", offset: out.count)
        }
    }

    private static func writeVarint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    private static func writeBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
        writeVarint(UInt64(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    // MARK: Decoding

    package static func decode(_ data: Data) throws(ArchiveError) -> Value {
        var reader = Reader(bytes: [UInt8](data))
        guard Array(try reader.take(4)) == magic else { throw ArchiveError(message: "not an Amber archive (bad magic)", offset: 0) }
        let found = try reader.byte()
        guard found == version else { throw ArchiveError(message: "archive version \(found) is not supported (this host reads \(version))", offset: 4) }
        let value = try reader.value(depth: 0)
        guard reader.remaining == 0 else { throw ArchiveError(message: "\(reader.remaining) bytes after the value", offset: reader.offset) }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        var remaining: Int { bytes.count - offset }

        func fail(_ message: String) -> ArchiveError { ArchiveError(message: message, offset: offset) }

        mutating func byte() throws(ArchiveError) -> UInt8 {
            guard remaining >= 1 else { throw fail("truncated") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: Int) throws(ArchiveError) -> ArraySlice<UInt8> {
            guard count >= 0, count <= remaining else { throw fail("truncated: \(count) bytes needed, \(remaining) left") }
            defer { offset += count }
            return bytes[offset..<(offset + count)]
        }

        mutating func varint() throws(ArchiveError) -> UInt64 {
            var result: UInt64 = 0
            for shift in stride(from: 0, to: 70, by: 7) {
                let b = try byte()
                guard shift < 63 || b <= 1 else { throw fail("integer does not fit in 64 bits") }
                result |= UInt64(b & 0x7F) << UInt64(shift)
                if b & 0x80 == 0 { return result }
            }
            throw fail("integer longer than 10 bytes")
        }

        /// A length or count that cannot exceed the bytes left (each item takes at least one).
        mutating func count() throws(ArchiveError) -> Int {
            let n = try varint()
            guard n <= UInt64(remaining) else { throw fail("length \(n) exceeds the \(remaining) bytes left") }
            return Int(n)
        }

        mutating func fixed64() throws(ArchiveError) -> UInt64 {
            try take(8).reversed().reduce(0) { ($0 << 8) | UInt64($1) }
        }

        mutating func string() throws(ArchiveError) -> String {
            let utf8 = try take(try count())
            guard let s = String(validating: utf8, as: UTF8.self) else { throw fail("string is not valid UTF-8") }
            return s
        }

        mutating func value(depth: Int) throws(ArchiveError) -> Value {
            guard depth < PropertyListArchive.maximumDepth else { throw fail("nested deeper than \(PropertyListArchive.maximumDepth) levels") }
            let raw = try byte()
            guard let tag = Tag(rawValue: raw) else { throw fail("unknown tag \(raw)") }
            switch tag {
            case .null: return .null
            case .falseValue: return .bool(false)
            case .trueValue: return .bool(true)
            case .integer:
                let zigzag = try varint()
                return .int(Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1))
            case .double: return .double(Double(bitPattern: try fixed64()))
            case .float:
                let bits = try take(4).reversed().reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
                return .float(Float(bitPattern: bits))
            case .string: return .string(try string())
            case .binary: return .binary(Data(try take(try count())))
            case .date:
                // The encoder writes only dates every binding reads; another (NaN, year 506713) is damage, not a value.
                let date = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try fixed64()))
                if let problem = DateText.problem(date) { throw fail(problem) }
                return .date(date)
            case .uuid:
                let b = Array(try take(16))
                return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                                         b[12], b[13], b[14], b[15])))
            case .array:
                let n = try count()
                var items: [Value] = []
                for _ in 0..<n { items.append(try value(depth: depth + 1)) }
                return .array(items)
            case .dictionary:
                let n = try count()
                var items: [String: Value] = [:]
                for _ in 0..<n {
                    let key = try string()
                    guard items[key] == nil else { throw fail("duplicate key \"\(key)\"") }
                    items[key] = try value(depth: depth + 1)
                }
                return .dictionary(items)
            }
        }
    }
}
