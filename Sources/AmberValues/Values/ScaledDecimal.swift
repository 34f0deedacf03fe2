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
        guard let parts = Parts(text),
              let number = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !number.isNaN
        else { return nil }
        self.number = number
        self.description = parts.canonicalText
    }

    /// The pieces of decimal text: sign, digits and the exponent of the last one.
    private struct Parts {
        var negative = false
        var digits = ""
        var exponent = 0

        init?(_ text: String) {
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
            guard whole.count + fraction.count > 0 else { return nil }
            var written = 0
            if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
                bytes = bytes.dropFirst()
                let negativeExponent = sign()
                let exponentDigits = run()
                // Five significant digits are ample for the range below and keep Int from overflowing.
                let significantExponent = exponentDigits.drop { $0 == UInt8(ascii: "0") }
                guard !exponentDigits.isEmpty, significantExponent.count <= 5 else { return nil }
                let magnitude = Int(String(decoding: significantExponent, as: UTF8.self)) ?? 0
                written = negativeExponent ? -magnitude : magnitude
            }
            guard bytes.isEmpty else { return nil }
            let all = String(decoding: whole, as: UTF8.self) + String(decoding: fraction, as: UTF8.self)
            digits = String(all.drop { $0 == "0" })
            if digits.isEmpty { digits = "0" }
            exponent = written - fraction.count
            // Decimal holds 38 significant digits; more would be rounded silently.
            let significant = digits.reversed().drop { $0 == "0" }.count
            guard significant <= 38, (-128...127).contains(exponent) else { return nil }
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
