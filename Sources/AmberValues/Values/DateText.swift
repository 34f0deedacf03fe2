import Foundation

/// Dates as exact text, and the range of dates Amber stores.
///
/// A `Date` is a double count of seconds since 2001-01-01 UTC. The text is
/// ISO 8601 in UTC on the proleptic Gregorian calendar (as Python and SQLite
/// count), with as many fractional digits as the double needs to be read
/// back bit for bit: `2024-03-01T12:00:00Z`, `2024-03-01T12:00:00.25Z`,
/// `2024-03-01T12:00:00.123456Z`. Reading refuses text that names more
/// precision than a double keeps at that distance from 2001 (microseconds in
/// the year 3000), so text never reads back as another instant.
package enum DateText {
    /// The dates every binding reads back, in seconds since 1970: from
    /// 0001-01-01T00:00:00Z up to, not including, 10000-01-01 (Python's
    /// `datetime` holds no other years).
    package static let range: Range<Double> = -62_135_596_800 ..< 253_402_300_800
    /// Seconds from 1970-01-01 to 2001-01-01.
    static let referenceOffset: Int64 = 978_307_200
    /// 1582-10-15, the first day of the Gregorian calendar, in seconds since 1970.
    static let gregorianReform: Int64 = -12_219_292_800

    /// Why `date` cannot be stored (nil: it can).
    package static func problem(_ date: Date) -> String? {
        let seconds = date.timeIntervalSince1970
        if seconds.isNaN { return "the date is NaN" }
        guard range.contains(seconds) else {
            return "the date (\(seconds) seconds since 1970) is outside the years 1 to 9999 that every binding reads back"
        }
        return nil
    }

    /// `date` as exact text, or nil when it is outside ``range`` or needs
    /// more than 25 fractional digits (a date within a hair of 2001-01-01).
    package static func format(_ date: Date) -> String? {
        guard problem(date) == nil else { return nil }
        let interval = date.timeIntervalSinceReferenceDate
        let whole = interval.rounded(.down)
        let fraction = interval - whole  // exact: both share the interval's binary exponent
        guard let digits = fractionDigits(fraction, whole: whole, interval: interval) else { return nil }
        let seconds = Int64(whole) + referenceOffset
        var text = civil(seconds)
        // Exactly three digits before the Gregorian reform is how Amber wrote dates before it counted on the
        // proleptic calendar (see parse); a fourth digit keeps the two apart.
        if !digits.isEmpty { text += "." + digits + (digits.count == 3 && seconds < gregorianReform ? "0" : "") }
        return text + "Z"
    }

    /// Fractional digits that read back as `interval`: all of them when the
    /// fraction has at most six (0.5, 0.125), else the fewest from six on, so
    /// a reader that keeps microseconds (Python) rounds the exact fraction,
    /// not a shorter text that merely reads back as the same double.
    private static func fractionDigits(_ fraction: Double, whole: Double, interval: Double) -> String? {
        if fraction == 0 { return "" }
        let exact = String(format: "%.17f", fraction).reversed().drop { $0 == "0" }.reversed()
        let first = exact.count - 2 <= 6 ? exact.count - 2 : 6
        for count in first...25 {
            let text = String(format: "%.\(count)f", fraction)
            // A fraction that rounds up to 1 at this precision needs more digits.
            guard text.hasPrefix("0."), let back = Double(text), whole + back == interval else { continue }
            let digits = text.dropFirst(2)
            // Past six digits, never a text that ends exactly halfway between two microseconds: a reader rounding
            // it to microseconds (half to even) could then round the other way from the exact fraction.
            if count > 6, digits.dropFirst(6).first == "5", digits.dropFirst(7).allSatisfy({ $0 == "0" }) { continue }
            return String(digits)
        }
        return nil
    }

    /// The date `text` names: `YYYY-MM-DD`, optionally followed by
    /// `THH:MM:SS`, fractional digits and `Z` or an offset (`+02:00`). nil
    /// when it is malformed, outside ``range``, or more precise than a
    /// double holds at that date.
    package static func parse(_ text: String) -> Date? {
        var scanner = Scanner(text)
        guard let year = scanner.number(4), scanner.take("-"), let month = scanner.number(2), scanner.take("-"),
              let day = scanner.number(2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        var seconds = days(year: year, month: month, day: day) * 86_400
        var digits = ""
        if scanner.take("T") || scanner.take(" ") {
            guard let hour = scanner.number(2), scanner.take(":"), let minute = scanner.number(2), scanner.take(":"),
                  let second = scanner.number(2), hour < 24, minute < 60, second < 60 else { return nil }
            seconds += hour * 3_600 + minute * 60 + second
            if scanner.take(".") {
                digits = scanner.digits()
                // More digits than the writer ever writes name no date more exactly.
                guard !digits.isEmpty, digits.count <= 25 else { return nil }
            }
            if scanner.take("Z") {
            } else if let sign = scanner.sign() {
                guard let hours = scanner.number(2) else { return nil }
                _ = scanner.take(":")
                guard let minutes = scanner.number(2), hours < 24, minutes < 60 else { return nil }
                seconds -= sign * (hours * 3_600 + minutes * 60)
            } else {
                return nil
            }
        }
        guard scanner.atEnd else { return nil }
        if digits.count == 3, seconds < gregorianReform, text.hasSuffix("Z") {
            // Written by an earlier Amber with Foundation's calendar, which is Julian before 1582-10-15.
            guard let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text), problem(date) == nil else { return nil }
            return date
        }
        let whole = Double(seconds - referenceOffset)
        let fraction = digits.isEmpty ? 0 : Double("0." + digits) ?? 0
        let date = Date(timeIntervalSinceReferenceDate: whole + fraction)
        guard problem(date) == nil else { return nil }
        // Exact: the instant, written to as many digits as were given, must give them back.
        if !digits.isEmpty {
            let back = date.timeIntervalSinceReferenceDate - date.timeIntervalSinceReferenceDate.rounded(.down)
            guard String(format: "%.\(digits.count)f", back) == "0." + digits else { return nil }
        }
        return date
    }

    // MARK: The proleptic Gregorian calendar (days since 1970-01-01)

    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS` of `seconds` since 1970.
    static func civil(_ seconds: Int64) -> String {
        let dayNumber = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - dayNumber * 86_400
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ n: Int64, _ width: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3_600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
    }

    /// Reads the fixed-width parts of a date text.
    private struct Scanner {
        let bytes: [UInt8]
        var offset = 0
        init(_ text: String) { bytes = Array(text.utf8) }
        var atEnd: Bool { offset == bytes.count }

        mutating func take(_ character: Character) -> Bool {
            guard let ascii = character.asciiValue, offset < bytes.count, bytes[offset] == ascii else { return false }
            offset += 1
            return true
        }

        mutating func sign() -> Int64? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }

        mutating func number(_ width: Int) -> Int64? {
            guard bytes.count - offset >= width else { return nil }
            let text = String(decoding: bytes[offset..<(offset + width)], as: UTF8.self)
            guard text.allSatisfy(\.isASCIIDigit), let value = Int64(text) else { return nil }
            offset += width
            return value
        }

        mutating func digits() -> String {
            let start = offset
            while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1 }
            return String(decoding: bytes[start..<offset], as: UTF8.self)
        }
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
