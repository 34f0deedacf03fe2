import Foundation

/// A base-10 number together with the exponent it was written with, so
/// `12.30` stays `12.30`: Foundation's `Decimal` alone would read back `12.3`.
///
/// Two scaled decimals are equal (`==`, `hash`) only if they are written the
/// same way: `12.30` and `12.3` are the same ``number`` but different values,
/// as Python's `Decimal` keeps them apart. Ordering and predicates compare
/// ``number``.
///
/// Limits (Foundation's `Decimal`): at most 38 significant digits and an
/// exponent of the last written digit (-2 for `12.30`, 2 for `12E+2`)
/// between -128 and 127; anything else is refused, never rounded.
public struct ScaledDecimal: Sendable, Hashable, CustomStringConvertible {
    /// The number's value.
    public let number: Decimal
    /// The canonical text: plain notation with exactly the written fraction
    /// digits (`12.30`, `-0.00`, `0.0000001`), or scientific notation when the
    /// written exponent is positive (`1.2E+3` for `12E+2`). Reading the text
    /// back (here or with Python's `Decimal`) gives the same value.
    public let description: String

    /// The number's digits and exponent as `Decimal` keeps them (trailing
    /// zeros dropped); `-0` becomes `0`.
    public init(_ number: Decimal) {
        self.number = number
        self.description = number.description
    }

    /// Parses `[+-]digits[.digits][(e|E)[+-]digits]` strictly: the whole text
    /// must be the number (no spaces), within the limits above. Returns nil otherwise.
    public init?(_ text: String) {
        guard let parts = try? Parts(text),
              let number = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !number.isNaN
        else { return nil }
        self.number = number
        self.description = parts.canonicalText
    }

    /// Why ``init(_:)-(String)`` refuses `text`, in words for an error ("has 39
    /// significant digits; a decimal holds at most 38"), or nil if it takes it.
    public static func refusal(of text: String) -> String? {
        do {
            _ = try Parts(text)
        } catch {
            return error.reason
        }
        return ScaledDecimal(text) == nil ? "is not a decimal number" : nil
    }

    /// What a decimal's text breaks.
    private enum Refusal: Error {
        case notDecimal
        case tooManyDigits(Int)
        case exponent(String)

        var reason: String {
            switch self {
            case .notDecimal: "is not a decimal number (digits, an optional point and fraction, an optional exponent)"
            case .tooManyDigits(let count): "has \(count) significant digits; a decimal holds at most 38"
            case .exponent(let why): "is out of range: \(why) (the last digit's exponent must be within -128...127)"
            }
        }
    }

    /// The pieces of decimal text: sign, digits and the exponent of the last one.
    private struct Parts {
        var negative = false
        var digits = ""
        var exponent = 0

        init(_ text: String) throws(Refusal) {
            var bytes = text.utf8[...]
            func sign() -> Bool {
                guard let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") else { return false }
                bytes = bytes.dropFirst()
                return first == UInt8(ascii: "-")
            }
            func run() -> Substring.UTF8View {
                let count = bytes.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }.count
                defer { bytes = bytes.dropFirst(count) }
                return bytes.prefix(count)
            }
            negative = sign()
            let whole = run()
            var fraction = bytes.prefix(0)
            if bytes.first == UInt8(ascii: ".") {
                bytes = bytes.dropFirst()
                fraction = run()
            }
            guard whole.count + fraction.count > 0 else { throw .notDecimal }
            var written = 0
            if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
                bytes = bytes.dropFirst()
                let negativeExponent = sign()
                let exponentDigits = run()
                // Five significant digits are ample for the range below and keep Int from overflowing.
                let significantExponent = exponentDigits.drop { $0 == UInt8(ascii: "0") }
                guard !exponentDigits.isEmpty else { throw .notDecimal }
                guard significantExponent.count <= 5 else { throw .exponent("an exponent of \(exponentDigits.count) digits") }
                let magnitude = Int(String(decoding: significantExponent, as: UTF8.self)) ?? 0
                written = negativeExponent ? -magnitude : magnitude
            }
            guard bytes.isEmpty else { throw .notDecimal }
            let all = String(decoding: whole, as: UTF8.self) + String(decoding: fraction, as: UTF8.self)
            digits = String(all.drop { $0 == "0" })
            if digits.isEmpty { digits = "0" }
            exponent = written - fraction.count
            // Decimal holds 38 significant digits; more would be rounded silently.
            let significant = digits.reversed().drop { $0 == "0" }.count
            guard significant <= 38 else { throw .tooManyDigits(significant) }
            guard (-128...127).contains(exponent) else { throw .exponent("its last digit's exponent is \(exponent)") }
        }

        var canonicalText: String {
            let sign = negative ? "-" : ""
            if exponent > 0 {
                let rest = digits.dropFirst()
                return sign + String(digits.prefix(1)) + (rest.isEmpty ? "" : "." + rest)
                    + "E+" + String(digits.count - 1 + exponent)
            }
            let scale = -exponent
            let padded = String(repeating: "0", count: max(0, scale + 1 - digits.count)) + digits
            let whole = padded.dropLast(scale), fraction = padded.suffix(scale)
            return sign + whole + (fraction.isEmpty ? "" : "." + fraction)
        }
    }
}
