import AmberModel
import AmberSQL
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// SQL functions Amber's compiled predicates call, registered on every
/// connection. Any other SQLite tool can still read the store; only
/// predicates with [c]/[d], MATCHES, extended attributes or `==` on a
/// decimal need these
/// (`amber_extended(_extra, 'key')` is `json_extract(_extra, '$.key')`).
enum SQLFunctions {
    /// The `flags` argument's bit for the predicate's `[c]`.
    static let caseInsensitive = ComparisonOptions.caseInsensitive.rawValue

    /// Registers every function; returns the first failing result code, or SQLITE_OK.
    static func register(on db: OpaquePointer) -> Int32 {
        typealias Function = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void
        let pure = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        let functions: [(String, Int32, Int32, Function)] = [
            ("amber_fold", 2, pure, foldFunction), ("amber_matches", 3, pure, matchesFunction),
            ("amber_extended", 2, pure, extendedKeyFunction), ("amber_decimal", 1, pure, decimalFunction),
            ("amber_decimal_arithmetic", 3, pure, decimalArithmeticFunction),
            // Derived attributes' triggers; the clock is read per call, so it is not deterministic.
            ("amber_case", 2, pure, caseFunction), ("amber_now", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, nowFunction),
        ]
        for (name, arity, flags, function) in functions {
            let rc = sqlite3_create_function_v2(db, name, arity, flags, nil, function, nil, nil, nil)
            if rc != SQLITE_OK { return rc }
        }
        return SQLITE_OK
    }

}

/// amber_fold(text, flags): NULL stays NULL. ASCII text folded for case only
/// takes a byte path with no Foundation call (the common case in searches).
private let foldFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, let textArg = args[0], sqlite3_value_type(textArg) != SQLITE_NULL else {
        sqlite3_result_null(context)
        return
    }
    let flags = sqlite3_value_int64(args[1])
    let count = Int(sqlite3_value_bytes(textArg))
    guard let text = sqlite3_value_text(textArg) else {
        sqlite3_result_null(context)
        return
    }
    let bytes = UnsafeBufferPointer(start: text, count: count)
    if flags == SQLFunctions.caseInsensitive, bytes.allSatisfy({ $0 < 0x80 }) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(count, 1)) { buffer in
            for i in 0..<count {
                let c = bytes[i]
                buffer[i] = (c >= 0x41 && c <= 0x5A) ? c | 0x20 : c
            }
            buffer.baseAddress?.withMemoryRebound(to: CChar.self, capacity: count) {
                sqlite3_result_text(context, $0, Int32(count), sqliteTransient)
            }
        }
        return
    }
    resultText(context, TextFolding.fold(String(decoding: bytes, as: UTF8.self), flags: flags))
}

extension Connection {
    /// Registers `amber_reencode(value, key, column)` for `reencoder`'s
    /// columns, or removes it (nil). SQLite holds a reference to the
    /// reencoder until the function is replaced or the connection closes, so
    /// a removal that fails (a statement still running) leaves nothing dangling.
    func registerReencoding(_ reencoder: Reencoder?) throws(AmberError) {
        let box = reencoder.map { Unmanaged.passRetained($0).toOpaque() }
        // Direct only: a trigger or view in the file cannot call it.
        let rc = sqlite3_create_function_v2(handle, "amber_reencode", 3, SQLITE_UTF8 | SQLITE_DIRECTONLY, box,
                                            reencoder == nil ? nil : reencodeFunction, nil, nil, box == nil ? nil : releaseReencoder)
        guard rc == SQLITE_OK else {
            // On failure SQLite has already called the destructor (releasing the box).
            throw error(rc, message: "cannot register amber_reencode: \(String(cString: sqlite3_errstr(rc)))")
        }
    }
}

/// Releases the reencoder SQLite held for amber_reencode.
private let releaseReencoder: @convention(c) (UnsafeMutableRawPointer?) -> Void = { box in
    if let box { Unmanaged<Reencoder>.fromOpaque(box).release() }
}

/// amber_reencode(value, key, column): see ``Reencoder``. NULL stays NULL.
private let reencodeFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, let value = args[0], let box = sqlite3_user_data(context) else { return sqlite3_result_null(context) }
    let reencoder = Unmanaged<Reencoder>.fromOpaque(box).takeUnretainedValue()
    let stored: Value
    switch sqlite3_value_type(value) {
    case SQLITE_NULL: return sqlite3_result_null(context)
    case SQLITE_BLOB:
        let count = Int(sqlite3_value_bytes(value))
        stored = .binary(sqlite3_value_blob(value).map { Data(bytes: $0, count: count) } ?? Data())
    case SQLITE_TEXT:
        let count = Int(sqlite3_value_bytes(value))
        stored = .string(sqlite3_value_text(value).map { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) } ?? "")
    case SQLITE_INTEGER: stored = .int(sqlite3_value_int64(value))
    default: stored = .double(sqlite3_value_double(value))
    }
    guard let moved = reencoder.move(stored, key: sqlite3_value_int64(args[1]), column: Int(sqlite3_value_int64(args[2]))) else {
        return sqlite3_result_error(context, "a value cannot be moved to its new transformer chain", -1)
    }
    switch moved {
    case .null: sqlite3_result_null(context)
    case .binary(let data): data.withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), sqliteTransient) }
    case .string(let text): resultText(context, text)
    case .int(let number): sqlite3_result_int64(context, number)
    case .double(let number): sqlite3_result_double(context, number)
    default: sqlite3_result_error(context, "a transformer chain gave a value that cannot be stored", -1)
    }
}

/// Makes `text` the function's result (SQLite copies it).
func resultText(_ context: OpaquePointer?, _ text: String) {
    var text = text
    text.withUTF8 { utf8 in
        utf8.withMemoryRebound(to: CChar.self) { bytes in
            if let base = bytes.baseAddress {
                sqlite3_result_text(context, base, Int32(bytes.count), sqliteTransient)
            } else {
                sqlite3_result_text(context, "", 0, nil)
            }
        }
    }
}

/// A function argument's text; nil for NULL (or when SQLite cannot give the text).
private func textArgument(_ value: OpaquePointer?) -> String? {
    guard let value, sqlite3_value_type(value) != SQLITE_NULL, let text = sqlite3_value_text(value) else { return nil }
    return String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
}

/// amber_case(text, upper): `text.lowercased()` (0) or `uppercased()` (1); NULL stays NULL.
private let caseFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, let string = textArgument(args[0]) else { return sqlite3_result_null(context) }
    resultText(context, sqlite3_value_int64(args[1]) == 0 ? string.lowercased() : string.uppercased())
}

/// amber_decimal(text): a stored decimal as its number alone (`12.30` → `12.3`),
/// so `==` and `IN` compare numbers while the column keeps the written scale.
/// NULL stays NULL; text that is not a decimal is returned as it is.
private let decimalFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, let string = textArgument(args[0]) else { return sqlite3_result_null(context) }
    resultText(context, ScaledDecimal(string).map { $0.number.description } ?? string)
}

/// amber_decimal_arithmetic(op, a, b): `a op b` (op '+', '-' or '*') for
/// decimals stored as text (or integers), exactly and with the scale a
/// decimal sum or product has (the larger of the operands' fraction digits
/// for + and -, their total for *: 0.10 + 0.20 is 0.30, 1.25 * 0.8 is
/// 1.000). NULL when an operand is NULL or not a decimal, or when the exact
/// result could need more than `Decimal`'s 38 digits (a batch update then
/// refuses the row, naming the attribute).
private let decimalArithmeticFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    /// The operand and its written fraction digits.
    func operand(_ value: OpaquePointer?) -> (number: Decimal, scale: Int)? {
        guard let value else { return nil }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return (Decimal(sqlite3_value_int64(value)), 0)
        case SQLITE_TEXT:
            guard let decimal = textArgument(value).flatMap(ScaledDecimal.init) else { return nil }
            let text = decimal.description
            let scale = text.contains("E") ? 0 : text.split(separator: ".", maxSplits: 1).dropFirst().first?.count ?? 0
            return (decimal.number, scale)
        default: return nil
        }
    }
    guard let args, let op = textArgument(args[0]), let left = operand(args[1]), let right = operand(args[2]) else {
        return sqlite3_result_null(context)
    }
    var (a, b) = (left.number, right.number)
    // Decimal keeps 38 digits and rounds past them without saying so here: refuse
    // any operation whose exact result could need more (a sum's aligned digits
    // plus a carry, a product's digits added).
    func digits(_ number: Decimal) -> (count: Int, exponent: Int) {
        (number.isZero ? 1 : number.significand.magnitude.description.count, number.isZero ? 0 : number.exponent)
    }
    let (da, db) = (digits(a), digits(b))
    let low = min(da.exponent, db.exponent)
    let needed = op == "*" ? da.count + db.count : max(da.count + da.exponent - low, db.count + db.exponent - low) + 1
    guard needed <= 38 else { return sqlite3_result_null(context) }
    var result = Decimal()
    let error: NSDecimalNumber.CalculationError
    switch op {
    case "+": error = NSDecimalAdd(&result, &a, &b, .plain)
    case "-": error = NSDecimalSubtract(&result, &a, &b, .plain)
    case "*": error = NSDecimalMultiply(&result, &a, &b, .plain)
    default: return sqlite3_result_null(context)
    }
    guard error == .noError, !result.isNaN else { return sqlite3_result_null(context) }
    // The plain text of the result, padded to the scale the operation gives; refused past 38 digits.
    let scale = op == "*" ? left.scale + right.scale : max(left.scale, right.scale)
    var text = result.description
    if text.allSatisfy({ $0.isNumber || $0 == "-" || $0 == "." }) {
        let written = text.split(separator: ".", maxSplits: 1).dropFirst().first?.count ?? 0
        if written < scale { text += (written == 0 ? "." : "") + String(repeating: "0", count: scale - written) }
    }
    guard let exact = ScaledDecimal(text) else { return sqlite3_result_null(context) }
    resultText(context, exact.description)
}

/// amber_now(): the time as Amber stores dates (seconds since 2001-01-01 UTC).
private let nowFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, _, _ in
    sqlite3_result_double(context, Date().timeIntervalSinceReferenceDate)
}

/// Holds a compiled regular expression as SQLite auxiliary data, so each
/// statement compiles its MATCHES pattern once rather than per row.
private final class CompiledRegex {
    let expression: WholeTextExpression
    init(_ expression: WholeTextExpression) { self.expression = expression }
}

/// amber_matches(text, pattern, flags): whole-string regular-expression match.
private let matchesFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, let textArg = args[0], let patternArg = args[1],
          sqlite3_value_type(textArg) != SQLITE_NULL, sqlite3_value_type(patternArg) != SQLITE_NULL
    else {
        sqlite3_result_null(context)
        return
    }
    let expression: WholeTextExpression
    if let cached = sqlite3_get_auxdata(context, 1) {
        expression = Unmanaged<CompiledRegex>.fromOpaque(cached).takeUnretainedValue().expression
    } else {
        let options = ComparisonOptions(rawValue: sqlite3_value_int64(args[2]))
        guard let compiled = WholeTextExpression(String(cString: sqlite3_value_text(patternArg)), options: options) else {
            sqlite3_result_error(context, "MATCHES: invalid regular expression", -1)
            return
        }
        expression = compiled
        let holder = Unmanaged.passRetained(CompiledRegex(compiled)).toOpaque()
        sqlite3_set_auxdata(context, 1, holder) { pointer in
            if let pointer { Unmanaged<CompiledRegex>.fromOpaque(pointer).release() }
        }
    }
    sqlite3_result_int(context, expression.matches(String(cString: sqlite3_value_text(textArg))) ? 1 : 0)
}
