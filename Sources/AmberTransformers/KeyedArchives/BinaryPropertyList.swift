import Foundation

/// A binary property list (`bplist00`, the format of Apple's keyed
/// archives), read from untrusted bytes: every object is parsed once into a
/// flat table whose containers refer to other objects by index, so reading
/// never recurses, and every offset, length and reference is checked against
/// the bytes before it is used. Foundation on Linux reads this format, but
/// keeps the archiver's object references (UIDs) opaque, and a hostile file
/// must not be able to stop the host: so Amber reads it itself.
package struct BinaryPropertyList {
    /// One object of the list.
    package enum Item: Equatable, Sendable {
        case null
        case bool(Bool)
        case int(Int64)
        case real(Double)
        /// A four-byte real: an archived `Float` stays one.
        case float(Float)
        /// Seconds since 2001-01-01 UTC.
        case date(Double)
        case data(Data)
        case string(String)
        /// A keyed archive's reference to one of its `$objects`.
        case uid(Int)
        /// Object indices.
        case array([Int])
        case set([Int])
        case dictionary(keys: [Int], values: [Int])

        /// What the item holds: references, or data and text units (at least one, for the marker).
        var size: Int {
            switch self {
            case .data(let bytes): max(1, bytes.count)
            case .string(let text): max(1, text.utf16.count)
            case .array(let refs), .set(let refs): max(1, refs.count)
            case .dictionary(let keys, let values): max(1, keys.count + values.count)
            default: 1
            }
        }
    }

    /// Every object, by index.
    package let items: [Item]
    /// The index of the top object.
    package let top: Int

    /// Why bytes are not a binary property list, with where it was found.
    package struct Failure: Error, CustomStringConvertible {
        package let message: String
        package var description: String { "binary property list: \(message)" }
    }

    package static let magic = Data("bplist00".utf8)

    /// Parses `data`.
    ///
    /// - Throws: ``Failure`` naming the object or byte that is wrong: a
    ///   short or damaged trailer, an offset or reference out of range, a
    ///   length past the end, text that is not valid, an unknown marker.
    package init(_ data: Data) throws(Failure) {
        let bytes = [UInt8](data)
        guard bytes.count >= Self.magic.count + 32, bytes.starts(with: Self.magic) else {
            throw Failure(message: "not a bplist00 file (\(bytes.count) bytes)")
        }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6]), referenceSize = Int(bytes[trailer + 7])
        let count = Self.unsigned(bytes, at: trailer + 8, size: 8), top = Self.unsigned(bytes, at: trailer + 16, size: 8)
        let table = Self.unsigned(bytes, at: trailer + 24, size: 8)
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            throw Failure(message: "trailer: offsets of \(offsetSize) bytes, references of \(referenceSize)")
        }
        // Each object takes at least one byte before the table: a count beyond that is a forgery.
        guard count > 0, count <= UInt64(trailer), top < count, table >= 8, table <= UInt64(trailer),
              UInt64(trailer) - table >= count * UInt64(offsetSize)
        else { throw Failure(message: "trailer: \(count) objects, top \(top), offset table at \(table) of \(bytes.count) bytes") }
        let reader = Reader(bytes: bytes, end: Int(table), referenceSize: referenceSize, count: Int(count))
        var items: [Item] = []
        items.reserveCapacity(Int(count))
        // Objects occupy bytes of their own, so what they hold (references, data and text bytes) adds up to
        // at most the file's size; objects that share or overlap bytes to multiply it are refused.
        var held = 0
        for index in 0..<Int(count) {
            let offset = Self.unsigned(bytes, at: Int(table) + index * offsetSize, size: offsetSize)
            guard offset >= 8, offset < table else { throw Failure(message: "object \(index): offset \(offset) outside the objects") }
            let item = try reader.item(at: Int(offset), index: index)
            held += item.size
            guard held <= bytes.count else {
                throw Failure(message: "object \(index): the objects hold more than the file's \(bytes.count) bytes (objects share their bytes)")
            }
            items.append(item)
        }
        self.items = items
        self.top = Int(top)
    }

    /// The big-endian unsigned integer of `size` bytes at `offset` (the caller checked the range).
    static func unsigned(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for byte in bytes[offset..<offset + size] { value = value << 8 | UInt64(byte) }
        return value
    }

    /// Reads objects out of the bytes before the offset table.
    private struct Reader {
        let bytes: [UInt8]
        /// Where the objects end (the offset table starts).
        let end: Int
        let referenceSize: Int
        let count: Int

        func item(at offset: Int, index: Int) throws(Failure) -> Item {
            func fail(_ message: String) -> Failure { Failure(message: "object \(index) at byte \(offset): \(message)") }
            let marker = bytes[offset], low = Int(marker & 0x0F)
            /// `length` bytes after `start`, if they are all before the table.
            func span(_ start: Int, _ length: Int) throws(Failure) -> ArraySlice<UInt8> {
                guard length >= 0, start <= end, length <= end - start else { throw fail("\(length) bytes run past the objects") }
                return bytes[start..<start + length]
            }
            /// A length from the marker's low nibble, or from the integer after it: (length, where the contents start).
            func length() throws(Failure) -> (Int, Int) {
                guard low == 0x0F else { return (low, offset + 1) }
                let head = try span(offset + 1, 1)
                guard let first = head.first, first & 0xF0 == 0x10, first & 0x0F <= 3 else { throw fail("a length that is not an integer") }
                let size = 1 << Int(first & 0x0F)
                let value = unsigned(try span(offset + 2, size))
                guard value <= UInt64(end) else { throw fail("a length of \(value)") }
                return (Int(value), offset + 2 + size)
            }
            func unsigned(_ slice: ArraySlice<UInt8>) -> UInt64 { slice.reduce(0) { $0 << 8 | UInt64($1) } }
            func references(_ n: Int, from start: Int) throws(Failure) -> [Int] {
                let (total, overflow) = n.multipliedReportingOverflow(by: referenceSize)
                guard !overflow else { throw fail("\(n) references") }
                let slice = try span(start, total)
                var found: [Int] = []
                found.reserveCapacity(n)
                for i in 0..<n {
                    let reference = unsigned(slice[(slice.startIndex + i * referenceSize)..<(slice.startIndex + (i + 1) * referenceSize)])
                    guard reference < UInt64(count) else { throw fail("a reference to object \(reference) of \(count)") }
                    found.append(Int(reference))
                }
                return found
            }
            switch marker >> 4 {
            case 0x0:
                switch marker {
                case 0x00: return .null
                case 0x08: return .bool(false)
                case 0x09: return .bool(true)
                default: throw fail("marker 0x\(String(marker, radix: 16))")
                }
            case 0x1:
                guard low <= 3 else { throw fail("an integer of \(1 << low) bytes") }
                let size = 1 << low, raw = unsigned(try span(offset + 1, size))
                // Eight-byte integers are signed; shorter ones are not.
                return .int(size == 8 ? Int64(bitPattern: raw) : Int64(raw))
            case 0x2:
                guard low == 2 || low == 3 else { throw fail("a real of \(1 << low) bytes") }
                let raw = unsigned(try span(offset + 1, 1 << low))
                return low == 2 ? .float(Float(bitPattern: UInt32(raw))) : .real(Double(bitPattern: raw))
            case 0x3:
                guard marker == 0x33 else { throw fail("marker 0x\(String(marker, radix: 16))") }
                return .date(Double(bitPattern: unsigned(try span(offset + 1, 8))))
            case 0x4:
                let (n, start) = try length()
                return .data(Data(try span(start, n)))
            case 0x5:
                let (n, start) = try length()
                let text = try span(start, n)
                guard text.allSatisfy({ $0 < 0x80 }) else { throw fail("an ASCII string with a byte above 127") }
                return .string(String(decoding: text, as: UTF8.self))
            case 0x6:
                let (n, start) = try length()
                let (total, overflow) = n.multipliedReportingOverflow(by: 2)
                guard !overflow else { throw fail("\(n) UTF-16 units") }
                let raw = try span(start, total)
                let units = stride(from: raw.startIndex, to: raw.endIndex, by: 2).map { UInt16(raw[$0]) << 8 | UInt16(raw[$0 + 1]) }
                var text = "", valid = true
                let stopped = transcode(units.makeIterator(), from: UTF16.self, to: UTF32.self, stoppingOnError: true) { scalar in
                    if let scalar = Unicode.Scalar(scalar) { text.unicodeScalars.append(scalar) } else { valid = false }
                }
                guard !stopped, valid, text.utf16.count == n else { throw fail("UTF-16 text that is not valid") }
                return .string(text)
            case 0x8:
                let raw = unsigned(try span(offset + 1, low + 1))
                guard low < 8, raw <= UInt64(Int32.max) else { throw fail("a UID of \(low + 1) bytes") }
                return .uid(Int(raw))
            case 0xA, 0xC:
                let (n, start) = try length()
                let found = try references(n, from: start)
                return marker >> 4 == 0xA ? .array(found) : .set(found)
            case 0xD:
                let (n, start) = try length()
                let keys = try references(n, from: start)
                let (skip, overflow) = n.multipliedReportingOverflow(by: referenceSize)
                guard !overflow else { throw fail("\(n) keys") }
                return .dictionary(keys: keys, values: try references(n, from: start + skip))
            default:
                throw fail("marker 0x\(String(marker, radix: 16))")
            }
        }
    }
}
