import AmberValues
import CSQLite
import Foundation

/// amber_extended(json, key): the value of top-level `key` in the JSON object
/// `json`, as `json_extract(json, '$.key')` gives it (a string as text, an
/// integer as an integer, another number as a real, true and false as 1 and
/// 0, an array or object as its JSON text; NULL when the key is absent or
/// `json` is NULL).
///
/// Why not json_extract itself: SQLite parses the whole document into a tree
/// on every call, which made a predicate on an extended attribute four times
/// slower than on a column. This scans the top level once, byte by byte,
/// and reads only the value asked for; an escaped string is decoded alone,
/// and only an escaped key (which Amber never writes) takes a full parse.
/// Unlike json_extract, it does not look past the value it returns, so a
/// document damaged after it is not reported here (reading the object is).
let extendedKeyFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, let jsonArg = args[0], let keyArg = args[1], sqlite3_value_type(jsonArg) != SQLITE_NULL,
          let json = sqlite3_value_text(jsonArg), let key = sqlite3_value_text(keyArg)
    else {
        sqlite3_result_null(context)
        return
    }
    let document = UnsafeBufferPointer(start: json, count: Int(sqlite3_value_bytes(jsonArg)))
    let name = UnsafeBufferPointer(start: key, count: Int(sqlite3_value_bytes(keyArg)))
    var scanner = TopLevelScanner(bytes: document)
    switch scanner.find(name) {
    case .absent: sqlite3_result_null(context)
    case .found(let range): scanner.result(range, into: context)
    case .nested(let range): resultText(context, minified(UnsafeBufferPointer(rebasing: document[range])))
    case .escaped(let range):
        guard case .string(let text)? = try? JSONValue.parse(Data(document[range])) else { return sqlite3_result_error(context, malformed, -1) }
        resultText(context, text)
    case .complex: fullParse(document, name, into: context)
    case .malformed: sqlite3_result_error(context, malformed, -1)
    }
}

private let malformed = "malformed JSON in an extended attribute column"

/// Reads a JSON object's top level without building anything.
private struct TopLevelScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    private var at = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    enum Outcome {
        case absent
        /// The value's bytes: a string without escapes (quotes included), a number or a literal.
        case found(Range<Int>)
        /// An array or object value's bytes.
        case nested(Range<Int>)
        /// A string value with escapes, quotes included.
        case escaped(Range<Int>)
        /// Needs a full parse: an escape in a key, or a document that is not an object.
        case complex
        case malformed
    }

    private var current: UInt8? { at < bytes.count ? bytes[at] : nil }

    private mutating func skipSpace() {
        while let c = current, c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { at += 1 }
    }

    /// The bytes of the string starting at `at` (past its closing quote after), and whether it has escapes.
    private mutating func string() -> (Range<Int>, escaped: Bool)? {
        guard current == UInt8(ascii: "\"") else { return nil }
        let start = at
        at += 1
        var escaped = false
        while let c = current {
            at += 1
            if c == UInt8(ascii: "\\") {
                escaped = true
                at += 1
            } else if c == UInt8(ascii: "\"") {
                return (start..<at, escaped)
            } else if c < 0x20 {
                return nil
            }
        }
        return nil
    }

    /// Skips one value (nested arrays and objects by counting brackets outside strings).
    private mutating func skipValue() -> Bool {
        guard let c = current else { return false }
        if c == UInt8(ascii: "\"") { return string() != nil }
        if c == UInt8(ascii: "[") || c == UInt8(ascii: "{") {
            var depth = 0
            while let c = current {
                if c == UInt8(ascii: "\"") {
                    guard string() != nil else { return false }
                    continue
                }
                if c == UInt8(ascii: "[") || c == UInt8(ascii: "{") { depth += 1 }
                if c == UInt8(ascii: "]") || c == UInt8(ascii: "}") { depth -= 1 }
                at += 1
                if depth == 0 { return true }
            }
            return false
        }
        let start = at
        while let c = current, c != UInt8(ascii: ","), c != UInt8(ascii: "}"), c != 0x20, c != 0x0A, c != 0x0D, c != 0x09 { at += 1 }
        return at > start
    }

    mutating func find(_ name: UnsafeBufferPointer<UInt8>) -> Outcome {
        skipSpace()
        guard current == UInt8(ascii: "{") else { return .complex }
        at += 1
        skipSpace()
        if current == UInt8(ascii: "}") { return .absent }
        while true {
            guard let (key, escaped) = string() else { return .malformed }
            if escaped { return .complex }
            skipSpace()
            guard current == UInt8(ascii: ":") else { return .malformed }
            at += 1
            skipSpace()
            var matches = false
            if key.count == name.count + 2, let document = bytes.baseAddress, let wanted = name.baseAddress {
                matches = memcmp(document + key.lowerBound + 1, wanted, name.count) == 0
            }
            let start = at
            if matches, let c = current {
                guard skipValue() else { return .malformed }
                if c == UInt8(ascii: "[") || c == UInt8(ascii: "{") { return .nested(start..<at) }
                if c == UInt8(ascii: "\""), bytes[start..<at].contains(UInt8(ascii: "\\")) { return .escaped(start..<at) }
                return .found(start..<at)
            }
            guard skipValue() else { return .malformed }
            skipSpace()
            if current == UInt8(ascii: "}") { return .absent }
            guard current == UInt8(ascii: ",") else { return .malformed }
            at += 1
            skipSpace()
        }
    }

    /// Makes the plain value in `range` the function's result.
    func result(_ range: Range<Int>, into context: OpaquePointer?) {
        let value = UnsafeBufferPointer(rebasing: bytes[range])
        guard let first = value.first else { return sqlite3_result_null(context) }
        if first == UInt8(ascii: "\"") {
            let inner = UnsafeBufferPointer(rebasing: value.dropFirst().dropLast())
            inner.withMemoryRebound(to: CChar.self) { text in
                if let base = text.baseAddress, !text.isEmpty {
                    sqlite3_result_text(context, base, Int32(text.count), sqliteTransient)
                } else {
                    sqlite3_result_text(context, "", 0, nil)
                }
            }
            return
        }
        if let integer = Self.smallInteger(value) { return sqlite3_result_int64(context, integer) }
        let text = String(decoding: value, as: UTF8.self)
        switch text {
        case "true": sqlite3_result_int(context, 1)
        case "false": sqlite3_result_int(context, 0)
        case "null": sqlite3_result_null(context)
        default:
            guard JSONNumber.isValid(value) else { return sqlite3_result_error(context, malformed, -1) }
            // An integer too large for 64 bits is a real, as SQLite reads it.
            if let integer = Int64(text) { return sqlite3_result_int64(context, integer) }
            sqlite3_result_double(context, Double(text) ?? .nan)
        }
    }
}

extension TopLevelScanner {
    /// A JSON integer of at most 18 digits (no leading zero), read without making a string: the common case.
    static func smallInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var at = 0, value: Int64 = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { at = 1 }
        let digits = bytes.count - at
        guard digits > 0, digits <= 18, digits == 1 || bytes[at] != UInt8(ascii: "0") else { return nil }
        while at < bytes.count {
            let digit = bytes[at] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value &* 10 &+ Int64(digit)
            at += 1
        }
        return negative ? -value : value
    }
}

/// JSON's number grammar: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
private enum JSONNumber {
    static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var at = 0
        func digits() -> Int {
            let start = at
            while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
            return at - start
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        let whole = digits()
        guard whole > 0, whole == 1 || bytes[at - whole] != UInt8(ascii: "0") else { return false }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            guard digits() > 0 else { return false }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard digits() > 0 else { return false }
        }
        return at == bytes.count
    }
}

/// JSON text without the white space between its tokens, as json_extract gives an array or object.
private func minified(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var inString = false, escaped = false
    for c in bytes {
        if inString {
            if escaped { escaped = false } else if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { inString = false }
        } else if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 {
            continue
        } else if c == UInt8(ascii: "\"") {
            inString = true
        }
        out.append(c)
    }
    return String(decoding: out, as: UTF8.self)
}

/// The result through a full parse, for what the scan leaves alone.
private func fullParse(_ document: UnsafeBufferPointer<UInt8>, _ name: UnsafeBufferPointer<UInt8>, into context: OpaquePointer?) {
    guard let parsed = try? JSONValue.parse(Data(buffer: document)) else { return sqlite3_result_error(context, malformed, -1) }
    guard case .object(let object) = parsed else { return sqlite3_result_null(context) }
    switch object[String(decoding: name, as: UTF8.self)] {
    case nil, .null?: sqlite3_result_null(context)
    case .bool(let flag)?: sqlite3_result_int(context, flag ? 1 : 0)
    case .int(let integer)?: sqlite3_result_int64(context, integer)
    case .double(let real)?: sqlite3_result_double(context, real)
    case .string(let text)?: resultText(context, text)
    case let nested?: resultText(context, nested.text())
    }
}
