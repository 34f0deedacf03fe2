import Foundation

/// A JSON document as a tree, read and written exactly.
///
/// Foundation's readers fold `1.0` into the integer `1`, turn integers beyond
/// 64 bits into doubles, and keep the last of two equal keys without a word;
/// values would change in silence. This reader keeps a number's kind as it is
/// written (a number with a fraction or an exponent is a double, one without
/// is an integer, and an integer that does not fit in 64 bits is an error),
/// refuses duplicate keys, numbers out of a double's range and nesting deeper
/// than ``maximumDepth``, and reads nothing but RFC 8259 JSON. The writer
/// writes a double so that it reads back as the same double (`1.0`, `-0.0`).
package enum JSONValue: Equatable {
    case null, bool(Bool), int(Int64), double(Double), string(String)
    case array([JSONValue]), object([String: JSONValue])

    /// Deeper nesting is refused, so hostile input cannot exhaust the stack.
    package static let maximumDepth = 256

    /// A short name of the JSON kind, for error messages.
    package var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Parses `data`.
    ///
    /// - Throws: ``AmberError/invalidJSON(path:message:)`` naming where the
    ///   problem is (`$.tags[2]`) and its byte offset.
    package static func parse(_ data: Data) throws(AmberError) -> JSONValue {
        var reader = JSONReader(bytes: [UInt8](data))
        return try reader.document()
    }

    /// Canonical text: sorted keys, no extra white space unless `pretty`
    /// (two-space indentation). Non-finite doubles, which JSON cannot hold,
    /// are written as `null`; callers refuse them before they get here.
    package func text(pretty: Bool = false) -> String {
        var out = ""
        write(to: &out, indent: pretty ? "\n" : nil)
        return out
    }

    private func write(to out: inout String, indent: String?) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            // Swift's description is the shortest text that reads back as the same double, and it keeps ".0".
            out += d.isFinite ? d.description : "null"
        case .string(let s): Self.quote(s, to: &out)
        case .array(let items):
            writeContainer(items.map { (nil, $0) }, open: "[", close: "]", to: &out, indent: indent)
        case .object(let members):
            writeContainer(members.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, open: "{", close: "}",
                           to: &out, indent: indent)
        }
    }

    private func writeContainer(_ items: [(String?, JSONValue)], open: String, close: String, to out: inout String,
                                indent: String?) {
        out += open
        let inner = indent.map { $0 + "  " }
        for (position, (key, value)) in items.enumerated() {
            if position > 0 { out += "," }
            if let inner { out += inner }
            if let key {
                Self.quote(key, to: &out)
                out += indent == nil ? ":" : ": "
            }
            value.write(to: &out, indent: inner)
        }
        if let indent, !items.isEmpty { out += indent }
        out += close
    }

    private static func quote(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// The strict reader behind ``JSONValue/parse(_:)``.
private struct JSONReader {
    let bytes: [UInt8]
    var offset = 0
    /// Where the reader is in the document, for errors: `$`, `$.name`, `$[3]`.
    var path: [String] = ["$"]

    init(bytes: [UInt8]) { self.bytes = bytes }

    func fail(_ message: String) -> AmberError {
        .invalidJSON(path: path.joined(), message: "\(message) (byte \(offset))")
    }

    mutating func document() throws(AmberError) -> JSONValue {
        // A byte-order mark is allowed before the text (RFC 8259 §8.1 lets readers ignore it).
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { offset = 3 }
        let value = try self.value(depth: 0)
        skipSpace()
        guard offset == bytes.count else { throw fail("not valid JSON: unexpected text after the value") }
        return value
    }

    mutating func skipSpace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(AmberError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw fail("nested deeper than \(JSONValue.maximumDepth) levels") }
        skipSpace()
        guard offset < bytes.count else { throw fail("not valid JSON: unexpected end of text") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("not valid JSON: unexpected character \(Self.show(bytes[offset]))")
        }
    }

    mutating func literal(_ word: String) throws(AmberError) {
        let utf8 = Array(word.utf8)
        guard bytes.count - offset >= utf8.count, Array(bytes[offset..<(offset + utf8.count)]) == utf8 else {
            throw fail("not valid JSON: unexpected character \(Self.show(bytes[offset]))")
        }
        offset += utf8.count
    }

    mutating func expect(_ byte: UInt8, _ what: String) throws(AmberError) {
        skipSpace()
        guard offset < bytes.count, bytes[offset] == byte else {
            throw fail("not valid JSON: \(what) expected" + (offset < bytes.count ? ", found \(Self.show(bytes[offset]))" : " at the end of the text"))
        }
        offset += 1
    }

    /// Consumes `byte` after optional white space if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard offset < bytes.count, bytes[offset] == byte else { return false }
        offset += 1
        return true
    }

    mutating func object(depth: Int) throws(AmberError) -> JSONValue {
        offset += 1
        var members: [String: JSONValue] = [:]
        if take(UInt8(ascii: "}")) { return .object(members) }
        repeat {
            try expect(UInt8(ascii: "\""), "a key")
            offset -= 1
            let start = offset
            let key = try string()
            guard members[key] == nil else {
                offset = start
                throw fail("the key \"\(key)\" appears twice")
            }
            try expect(UInt8(ascii: ":"), "\":\"")
            path.append(Identifier.isValid(key) ? ".\(key)" : "[\(JSONValue.string(key).text())]")
            members[key] = try value(depth: depth + 1)
            path.removeLast()
        } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"), "\",\" or \"}\"")
        return .object(members)
    }

    mutating func array(depth: Int) throws(AmberError) -> JSONValue {
        offset += 1
        var items: [JSONValue] = []
        if take(UInt8(ascii: "]")) { return .array(items) }
        repeat {
            path.append("[\(items.count)]")
            items.append(try value(depth: depth + 1))
            path.removeLast()
        } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"), "\",\" or \"]\"")
        return .array(items)
    }

    mutating func string() throws(AmberError) -> String {
        offset += 1
        var scalars = String.UnicodeScalarView()
        var runStart = offset
        func flushRun(_ end: Int) throws(AmberError) {
            guard end > runStart else { return }
            guard let run = String(validating: bytes[runStart..<end], as: UTF8.self) else { throw fail("a string is not valid UTF-8") }
            scalars.append(contentsOf: run.unicodeScalars)
        }
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                try flushRun(offset)
                offset += 1
                return String(scalars)
            }
            if byte < 0x20 { throw fail("not valid JSON: a control character inside a string") }
            if byte != UInt8(ascii: "\\") {
                offset += 1
                continue
            }
            try flushRun(offset)
            offset += 1
            guard offset < bytes.count else { break }
            let escape = bytes[offset]
            offset += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"): scalars.append(try unicodeEscape())
            default: throw fail("not valid JSON: unknown escape \\\(Self.show(escape))")
            }
            runStart = offset
        }
        throw fail("not valid JSON: unterminated string")
    }

    /// The scalar of `\uXXXX` (the `\u` read), joining a surrogate pair; a lone surrogate cannot be a String.
    mutating func unicodeEscape() throws(AmberError) -> Unicode.Scalar {
        let first = try hex4()
        if (0xD800..<0xDC00).contains(first) {
            guard bytes.count - offset >= 2, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                throw fail("a lone surrogate \\u\(String(first, radix: 16)) in a string")
            }
            offset += 2
            let second = try hex4()
            guard (0xDC00..<0xE000).contains(second) else { throw fail("a lone surrogate \\u\(String(first, radix: 16)) in a string") }
            // Always a valid scalar: 0x10000 + 20 bits.
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)) ?? "\u{FFFD}"
        }
        guard let scalar = Unicode.Scalar(first) else { throw fail("a lone surrogate \\u\(String(first, radix: 16)) in a string") }
        return scalar
    }

    mutating func hex4() throws(AmberError) -> UInt32 {
        guard bytes.count - offset >= 4, bytes[offset..<(offset + 4)].allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }),
              let value = UInt32(String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self), radix: 16) else {
            throw fail("not valid JSON: \\u needs four hexadecimal digits")
        }
        offset += 4
        return value
    }

    mutating func number() throws(AmberError) -> JSONValue {
        let start = offset
        func digits() -> Int {
            let first = offset
            while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1 }
            return offset - first
        }
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        let integerStart = offset
        let integerDigits = digits()
        guard integerDigits > 0 else { throw fail("not valid JSON: a number needs digits") }
        guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { throw fail("not valid JSON: a number with a leading zero") }
        var isInteger = true
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            isInteger = false
            guard digits() > 0 else { throw fail("not valid JSON: a fraction needs digits") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            isInteger = false
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw fail("not valid JSON: an exponent needs digits") }
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        if isInteger {
            guard let integer = Int64(text) else {
                offset = start
                throw fail("the integer \(text) does not fit in 64 bits")
            }
            return .int(integer)
        }
        // Double(String) rounds correctly; only overflow is refused (underflow to a tiny or zero double is rounding too).
        guard let double = Double(text), double.isFinite else {
            offset = start
            throw fail("the number \(text) is beyond the range of a double")
        }
        return .double(double)
    }

    static func show(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }
}
