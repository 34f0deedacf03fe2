import Foundation

extension BinaryPropertyList {
    /// The `bplist00` bytes of `items` (the flat table the reader makes:
    /// containers refer to other items by index), `top` the top object.
    /// Integers take the fewest bytes that hold them (negative ones eight, as
    /// the format requires); text is ASCII when it can be, else UTF-16.
    ///
    /// Every reference must be an index of `items`: the caller builds the
    /// table, and nothing here reads untrusted input.
    package static func encode(_ items: [Item], top: Int) -> Data {
        // Sized by the count, not the largest index: CoreFoundation refuses a list whose count its references cannot hold.
        let referenceSize = byteCount(UInt64(items.count))
        var out = [UInt8](magic)
        var offsets: [Int] = []
        offsets.reserveCapacity(items.count)
        func append(_ value: UInt64, size: Int) {
            for shift in stride(from: (size - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        func header(_ kind: UInt8, count: Int) {
            guard count >= 15 else { return out.append(kind << 4 | UInt8(count)) }
            out.append(kind << 4 | 0xF)
            let size = byteCount(UInt64(count))
            out.append(0x10 | UInt8(size.trailingZeroBitCount))
            append(UInt64(count), size: size)
        }
        func references(_ indices: [Int]) {
            for index in indices { append(UInt64(index), size: referenceSize) }
        }
        for item in items {
            offsets.append(out.count)
            switch item {
            case .null: out.append(0x00)
            case .bool(let flag): out.append(flag ? 0x09 : 0x08)
            case .int(let number):
                let size = number < 0 ? 8 : byteCount(UInt64(number))
                out.append(0x10 | UInt8(size.trailingZeroBitCount))
                append(UInt64(bitPattern: number), size: size)
            case .real(let number):
                out.append(0x23)
                append(number.bitPattern, size: 8)
            case .float(let number):
                out.append(0x22)
                append(UInt64(number.bitPattern), size: 4)
            case .date(let seconds):
                out.append(0x33)
                append(seconds.bitPattern, size: 8)
            case .data(let bytes):
                header(0x4, count: bytes.count)
                out.append(contentsOf: bytes)
            case .string(let text) where text.utf8.allSatisfy({ $0 < 0x80 }):
                header(0x5, count: text.utf8.count)
                out.append(contentsOf: text.utf8)
            case .string(let text):
                header(0x6, count: text.utf16.count)
                for unit in text.utf16 { append(UInt64(unit), size: 2) }
            case .uid(let number):
                let size = byteCount(UInt64(number))
                out.append(0x80 | UInt8(size - 1))
                append(UInt64(number), size: size)
            case .array(let indices), .set(let indices):
                if case .set = item { header(0xC, count: indices.count) } else { header(0xA, count: indices.count) }
                references(indices)
            case .dictionary(let keys, let values):
                header(0xD, count: keys.count)
                references(keys)
                references(values)
            }
        }
        let table = out.count, offsetSize = byteCount(UInt64(table))
        for offset in offsets { append(UInt64(offset), size: offsetSize) }
        out.append(contentsOf: [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
        append(UInt64(items.count), size: 8)
        append(UInt64(top), size: 8)
        append(UInt64(table), size: 8)
        return Data(out)
    }

    /// The fewest of 1, 2, 4 or 8 bytes that hold `value`.
    private static func byteCount(_ value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }
}
