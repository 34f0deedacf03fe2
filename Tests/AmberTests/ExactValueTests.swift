import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberTransformers
@testable import AmberValues

/// Exact or refused: every value reads back as it was set (type and value, bit
/// for bit), or the set is refused naming the attribute. Random values with a
/// fixed seed, judged against a plain statement of what must be refused.
@Suite("Exact or refused") struct ExactValueTests {
    static func model() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Sample") {
                Attribute.integer64("seq")
                Attribute.integer16("i16")
                Attribute.integer32("i32")
                Attribute.integer64("i64")
                Attribute.double("ratio")
                Attribute.float("weight")
                Attribute.date("when")
                Attribute.decimal("price")
                Attribute.string("name")
                Attribute.binary("blob")
                Attribute.transformable("archived")
                Attribute.transformable("json", transformers: [Registry.jsonTransformerName])
                Attribute.double("scratch").transient()
            }
        })
    }

    /// A double of any bit pattern, edges weighted in.
    static func double(_ random: inout SplitMix64) -> Double {
        let edges: [Double] = [0, -0.0, 1, -1, .infinity, -.infinity, .nan, .ulpOfOne, .leastNonzeroMagnitude,
                               .greatestFiniteMagnitude, 9_007_199_254_740_992, 0.1]
        return random.next() % 3 == 0 ? edges[Int(random.next() % UInt64(edges.count))] : Double(bitPattern: random.next())
    }

    /// A date around and beyond the range every binding reads, fractions of any size.
    static func date(_ random: inout SplitMix64) -> Date {
        let bounds = [DateText.range.lowerBound, DateText.range.upperBound, 0, -978_307_200]
        let seconds: Double = switch random.next() % 4 {
        case 0: bounds[Int(random.next() % 4)] + Double(Int64(random.next() % 5) - 2) / 4
        case 1: Double(bitPattern: random.next())
        case 2: Double(Int64(bitPattern: random.next() % 400_000_000_000) - 100_000_000_000) + Double(random.next() % 1_000_000) / 1e6
        default: Double(Int64(random.next() % 3_000_000_000)) + Double(bitPattern: random.next() >> 12 | 0x3FF0_0000_0000_0000) - 1
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// Decimal text as people and Python's `str(Decimal)` write it: any sign,
    /// leading and trailing zeros, a point or none, an exponent or none; now
    /// and then more significant digits than a decimal holds.
    static func decimalText(_ random: inout SplitMix64) -> String {
        func digits(_ limit: UInt64) -> String {
            String((0..<Int(random.next() % limit)).map { _ in "0123456789".randomElement(using: &random) ?? "0" })
        }
        let sign = ["", "-", "+"][Int(random.next() % 3)]
        var whole = digits(24), fraction = digits(24)
        if whole.isEmpty && fraction.isEmpty { whole = "0" }
        if random.next() % 4 == 0 { fraction += String(repeating: "0", count: Int(random.next() % 5)) }
        let point = fraction.isEmpty ? (random.next() % 2 == 0 ? "." : "") : "." + fraction
        let exponent = random.next() % 3 == 0 ? ["e", "E"][Int(random.next() % 2)] + String(Int(random.next() % 81) - 40) : ""
        return sign + whole + point + exponent
    }

    /// Significant digits of decimal text (leading and trailing zeros aside): more than 38 must be refused.
    static func significantDigits(_ text: String) -> Int {
        text.prefix { $0 != "e" && $0 != "E" }.filter(\.isNumber).drop { $0 == "0" }.reversed().drop { $0 == "0" }.count
    }

    /// A plist-like value: numbers of every kind, dates, one-key dictionaries that look like JSON's forms.
    static func plist(_ random: inout SplitMix64, depth: Int = 0) -> Value {
        switch random.next() % (depth < 3 ? 12 : 9) {
        case 0: return .null
        case 1: return .bool(random.next() % 2 == 0)
        case 2: return .int(Int64(bitPattern: random.next()))
        case 3: return .double(double(&random))
        case 4: return .float(Float(bitPattern: UInt32(truncatingIfNeeded: random.next())))
        case 5: return .string(String((0..<Int(random.next() % 6)).map { _ in "a\"\\\n😀\u{0}$€".randomElement(using: &random) ?? "a" }))
        case 6: return .binary(Data((0..<Int(random.next() % 6)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
        case 7: return .date(date(&random))
        case 8: return .uuid(UUID())
        case 9: return .array((0..<Int(random.next() % 4)).map { _ in plist(&random, depth: depth + 1) })
        case 10:
            let key = JSONTransformer.reservedKeys.sorted()[Int(random.next() % 5)]
            return .dictionary([key: plist(&random, depth: depth + 1)])
        default:
            var items: [String: Value] = [:]
            for index in 0..<Int(random.next() % 4) { items["k\(index)"] = plist(&random, depth: depth + 1) }
            return .dictionary(items)
        }
    }

    /// The plain statement: why `value` set on `attribute` must be refused (nil: it must read back exactly).
    static func mustRefuse(_ value: Value, for attribute: String) -> Bool {
        func outOfRange(_ date: Date) -> Bool {
            let seconds = date.timeIntervalSince1970
            return seconds.isNaN || seconds < -62_135_596_800 || seconds >= 253_402_300_800
        }
        func badItem(_ value: Value) -> Bool {
            switch value {
            case .double(let d): !d.isFinite
            case .float(let f): !f.isFinite
            case .date(let d): outOfRange(d)
            case .array(let items): items.contains(where: badItem)
            case .dictionary(let items): items.values.contains(where: badItem)
            default: false
            }
        }
        switch value {
        case .string(let text) where attribute == "price": return significantDigits(text) > 38
        case .double(let d): return d.isNaN && attribute != "scratch"
        case .float(let f): return f.isNaN
        case .date(let d): return outOfRange(d)
        case .array(let items): return items.contains(where: badItem)
        case .dictionary(let items): return items.values.contains(where: badItem)
        default: return false
        }
    }

    @Test("random values of every type read back exactly after save and reopen, or are refused at set naming the attribute")
    func randomValuesReadBackExactlyOrAreRefused() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("exact.amber").path
        let model = try Self.model()
        var random = SplitMix64(seed: 17)
        var expected: [[String: Value]] = []
        var refusals = 0
        do {
            let context = Context(store: try Store(path: path, model: model))
            for seq in 0..<400 {
                let object = try context.insert("Sample")
                try object.setValue(.int(Int64(seq)), forKey: "seq")
                var row: [String: Value] = [:]
                let candidates: [(String, Value)] = [
                    ("i16", .int(Int64(Int16(truncatingIfNeeded: random.next())))),
                    ("i32", .int(Int64(Int32(truncatingIfNeeded: random.next())))),
                    ("i64", .int(Int64(bitPattern: random.next()))),
                    ("ratio", .double(Self.double(&random))),
                    ("weight", .float(Float(bitPattern: UInt32(truncatingIfNeeded: random.next())))),
                    ("when", .date(Self.date(&random))),
                    ("price", .string(Self.decimalText(&random))),
                    ("name", .string(String(repeating: "é😀\u{0}", count: Int(random.next() % 3)))),
                    ("blob", .binary(Data((0..<Int(random.next() % 5)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))),
                    ("archived", Self.plist(&random)),
                    ("json", Self.plist(&random, depth: 1).containerOrNull),
                ]
                for (name, written) in candidates {
                    var value = written
                    let error = amberError {
                        // Decimal text is parsed as the C API and Python parse it.
                        if name == "price", case .string(let text) = written { value = .decimal(try Value.decimal(parsing: text)) }
                        try object.setValue(value, forKey: name)
                    }
                    if Self.mustRefuse(written, for: name) {
                        guard case .invalidValue(let place, _, _)? = error else {
                            Issue.record("Sample.\(name) = \(value) was not refused: \(String(describing: error))")
                            continue
                        }
                        #expect(place == (name == "price" ? "decimal text" : "Sample.\(name)"))
                        refusals += 1
                    } else if let error {
                        Issue.record("Sample.\(name) = \(value) was refused: \(error)")
                    } else {
                        row[name] = value
                    }
                }
                // A refused set changes nothing: every value read now is the one last accepted.
                for (name, value) in row { #expect(try object.value(forKey: name).isIdentical(to: value), "\(name)") }
                expected.append(row)
            }
            try context.save()
        }
        #expect(refusals > 50, "the generator must reach the refusals too")
        let objects = try Context(store: try Store(path: path, model: model)).fetch("Sample", sortedBy: [.ascending("seq")])
        #expect(objects.count == expected.count)
        for (object, row) in zip(objects, expected) {
            for (name, value) in row {
                let back = try object.value(forKey: name)
                let stored = ["ratio", "weight", "when"].contains(name) ? value.storedInREAL : value
                #expect(back.isIdentical(to: stored), "Sample.\(name): set \(value), read \(back)")
            }
        }
    }

    @Test("decimals keep the exponent they were written with; text that is not exactly a decimal is refused")
    func decimalsKeepTheirScale() throws {
        for (text, canonical) in [("12.30", "12.30"), ("-0.00", "-0.00"), ("1.2e3", "1.2E+3"), ("12E+2", "1.2E+3"),
                                  ("0.0000001", "0.0000001"), ("1E-7", "0.0000001"), ("+007.50", "7.50"), (".5", "0.5"),
                                  ("5.", "5"), ("0e5", "0E+5"), ("1200", "1200"), ("-1.000e-2", "-0.01000")] {
            #expect(try Value.decimal(parsing: text).description == canonical, "\(text)")
        }
        for text in [" 12.5", "12.5 ", "1e", "e5", ".", "", "NaN", "1.5x", "1e-129", "1e128", "1e99999999999", "--1", "1_000",
                     String(repeating: "9", count: 39)] {
            #expect(amberError { _ = try Value.decimal(parsing: text) } != nil, "\(text)")
        }
        #expect(try Value.decimal(parsing: "12.30") != Value.decimal(parsing: "12.3"), "equal numbers written differently are different values")
        #expect(Value.decimal(Decimal(string: "12.30") ?? 0).description == "12.3", "a Decimal has no scale to keep")
        var random = SplitMix64(seed: 5)
        for _ in 0..<5_000 {
            let text = Self.decimalText(&random)
            guard Self.significantDigits(text) <= 38 else {
                #expect(ScaledDecimal(text) == nil, "\(text)")
                continue
            }
            let decimal = try #require(ScaledDecimal(text), "\(text)")
            #expect(decimal.number == Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), "\(text)")
            #expect(ScaledDecimal(decimal.description) == decimal, "\(text) → \(decimal)")
            // The scale as written: fraction digits less the exponent.
            let mantissa = text.prefix { $0 != "e" && $0 != "E" }
            let fraction = mantissa.firstIndex(of: ".").map { mantissa.distance(from: $0, to: mantissa.endIndex) - 1 } ?? 0
            let exponent = mantissa.count < text.count ? Int(text.dropFirst(mantissa.count + 1)) ?? 0 : 0
            let scale = fraction - exponent
            if scale >= 0 {
                let written = decimal.description.split(separator: ".", omittingEmptySubsequences: false)
                #expect(!decimal.description.contains("E") && (written.count == 2 ? written[1].count : 0) == scale, "\(text) → \(decimal)")
            } else {
                #expect(decimal.description.contains("E+"), "\(text) → \(decimal)")
            }
        }
    }

    @Test("stored decimals read back with their scale, compare as numbers in predicates and sort by value")
    func storedDecimalsKeepTheirScale() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("decimals.amber").path
        let written = ["12.30", "12.3", "9.900", "1.2E+3", "-0.00", "100"]
        let model = try Model(ModelDescription {
            EntityDescription("Sample") {
                Attribute.integer64("seq")
                Attribute.decimal("price")
            }
        })
        do {
            let context = Context(store: try Store(path: path, model: model))
            for (seq, text) in written.enumerated() {
                let object = try context.insert("Sample")
                try object.setValue(.int(Int64(seq)), forKey: "seq")
                try object.setValue(.decimal(try Value.decimal(parsing: text)), forKey: "price")
            }
            try context.save()
        }
        let context = Context(store: try Store(path: path, model: model))
        let back = try context.fetch("Sample", sortedBy: [.ascending("seq")]).map { try $0.value(forKey: "price").description }
        #expect(back == written.map { try? Value.decimal(parsing: $0).description })
        let sample = try context.insert("Sample")
        let nan = amberError { try sample.setValue(.decimal(Decimal.nan), forKey: "price") }
        #expect(nan?.description.contains("Sample.price") == true && nan?.description.contains("NaN") == true)
        let matched = try context.fetch("Sample", where: "price == 12.3").map { try $0.value(forKey: "seq") }
        #expect(Set(matched) == [.int(0), .int(1)])
        let sorted = try context.fetch("Sample", sortedBy: [.ascending("price"), .ascending("seq")]).map { try $0.value(forKey: "seq") }
        // The unsaved sample, with no price and no seq, comes first: nulls sort first.
        #expect(sorted == [.null, .int(4), .int(2), .int(0), .int(1), .int(5), .int(3)])
    }

    @Test("plist values cross the C API's JSON form exactly, or are refused; the form's text is strict")
    func plistJSONFormIsExact() throws {
        var random = SplitMix64(seed: 23)
        for _ in 0..<3_000 {
            let value = Self.plist(&random, depth: 1).containerOrNull
            guard !Self.mustRefuse(value, for: "json") else {
                #expect(throws: AmberError.self) { _ = try value.propertyListJSON() }
                continue
            }
            let text = try value.propertyListJSON()
            let back = try Value(propertyListJSON: text)
            #expect(back.isIdentical(to: value), "\(value) → \(text) → \(back)")
        }
        // Exact kinds: a fraction is a double, an integer beyond 64 bits or a duplicate key is an error, not a change.
        #expect(try Value(propertyListJSON: "[1.0, 1, -0.0, 1e2]").isIdentical(to: .array([.double(1), .int(1), .double(-0.0), .double(100)])))
        #expect(try Value(propertyListJSON: #"{"$dictionary": {"$date": "x"}}"#) == .dictionary(["$date": .string("x")]))
        #expect(try Value(propertyListJSON: #"[{"$float": 0.5}]"#).isIdentical(to: .array([.float(0.5)])))
        for (text, message) in [("[18446744073709551617]", "$[0]: the integer 18446744073709551617 does not fit in 64 bits"),
                                ("[1e400]", "$[0]: the number 1e400 is beyond the range of a double"),
                                (#"{"a": 1, "a": 2}"#, #"$: the key "a" appears twice"#),
                                (#"[{"$float": 0.1}]"#, "$float 0.1 is not a single-precision number"),
                                (#"[{"$date": "2024-13-01T00:00:00Z"}]"#, "is not an ISO 8601 date"),
                                ("[NaN]", "unexpected character 'N'"), ("[01]", "leading zero"), ("[1,]", "unexpected character ']'")] {
            let error = amberError { _ = try Value(propertyListJSON: text) }
            #expect(error.map { "\($0)".contains(message) } == true, "\(text): \(String(describing: error))")
        }
    }

    @Test("bounds and predicate constants take any date that is not NaN; a stored default must be readable and not NaN")
    func datesThatAreOnlyCompared() throws {
        let model = try Model(ModelDescription {
            EntityDescription("Event") {
                Attribute.date("when").min(.date(.distantPast))
            }
        })
        let context = Context(store: try Store.inMemory(model: model))
        let event = try context.insert("Event")
        try event.setValue(.date(Date(timeIntervalSince1970: 0)), forKey: "when")
        try context.save()
        #expect(try context.fetch(FetchRequest("Event", predicate: try FetchPredicate("when > %@", arguments: [.date(.distantPast)]))).count == 1)
        for (value, words) in [(Value.date(.distantPast), "outside the years 1 to 9999"), (.double(.nan), "NaN")] {
            let attribute = value.isNaN ? Attribute.double("x").defaultValue(value) : Attribute.date("x").defaultValue(value)
            guard case .invalidModel(let problems)? = amberError({ _ = try Model(ModelDescription { EntityDescription("E") { attribute } }) }) else {
                Issue.record("a default of \(value) bound")
                continue
            }
            #expect(problems.map(\.description).joined().contains(words), "\(problems)")
        }
        #expect(throws: AmberError.self) { _ = try JSONValue.parse(Data(#"["\u+041"]"#.utf8)) }
    }

    @Test("dates as text: exact digits, the proleptic Gregorian calendar, more precision than a date holds refused")
    func dateText() throws {
        #expect(DateText.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(DateText.format(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
        #expect(DateText.format(Date(timeIntervalSince1970: 253_402_300_799.5)) == "9999-12-31T23:59:59.5Z")
        #expect(DateText.format(Date(timeIntervalSince1970: 253_402_300_800)) == nil)
        #expect(DateText.format(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")  // a leap day
        #expect(DateText.parse("2000-02-30") == nil && DateText.parse("1900-02-29") == nil)
        #expect(DateText.parse("2024-03-01T14:00:00+02:00") == DateText.parse("2024-03-01T12:00:00Z"))
        // Microseconds in the year 3000 are finer than a date's double holds there: refused, not moved.
        #expect(DateText.parse("3000-01-01T00:00:00.123457Z") == nil)
        #expect(DateText.parse("3000-01-01T00:00:00.125Z") != nil)
        // Text an earlier Amber wrote (three digits, Foundation's calendar: Julian before the Gregorian reform) reads as it meant.
        #expect(DateText.parse("0001-01-03T00:00:00.000Z")?.timeIntervalSince1970 == -62_135_596_800)
        #expect(DateText.format(Date(timeIntervalSince1970: -62_135_596_800 + 0.125)) == "0001-01-01T00:00:00.1250Z")
        #expect(DateText.parse("0001-01-01T00:00:00.1250Z")?.timeIntervalSince1970 == -62_135_596_800 + 0.125)
        // A reader rounding to microseconds never meets a text halfway between two.
        let halfway = try #require(DateText.format(Date(timeIntervalSinceReferenceDate: 0.1234565)))
        #expect(!halfway.hasSuffix("1234565Z"), "\(halfway)")
        #expect(DateText.parse("2024-01-01T00:00:00." + String(repeating: "1", count: 26) + "Z") == nil)
        var random = SplitMix64(seed: 29)
        for _ in 0..<20_000 {
            let date = Self.date(&random)
            guard let text = DateText.format(date) else {
                #expect(Self.mustRefuse(.date(date), for: "when") || date.timeIntervalSinceReferenceDate.magnitude < 1e-6, "\(date.timeIntervalSince1970)")
                continue
            }
            let back = try #require(DateText.parse(text), "\(text)")
            #expect(back.timeIntervalSinceReferenceDate.bitPattern == date.timeIntervalSinceReferenceDate.bitPattern, "\(text)")
        }
    }
}

private extension Value {
    /// The one documented exception (docs/values.md): SQLite's REAL columns hold one zero, so a Double, Float or
    /// Date attribute's -0.0 reads back as 0.0 (equal by `==` in every language). Plists keep -0.0.
    var storedInREAL: Value {
        switch self {
        case .double(let d) where d == 0: .double(0)
        case .float(let f) where f == 0: .float(0)
        case .date(let d) where d.timeIntervalSinceReferenceDate == 0: .date(Date(timeIntervalSinceReferenceDate: 0))
        default: self
        }
    }

    /// Arrays and dictionaries as they are; anything else as an array holding it (the JSON form carries containers).
    var containerOrNull: Value {
        switch self {
        case .array, .dictionary: self
        default: .array([self])
        }
    }
}

/// A decimal refused says which limit it broke (issue 43, item 10).
@Test func refusedDecimalsSayWhichLimitTheyBroke() throws {
    #expect(ScaledDecimal.refusal(of: String(repeating: "9", count: 39)) == "has 39 significant digits; a decimal holds at most 38")
    #expect(ScaledDecimal.refusal(of: "1E-129")?.contains("exponent is -129") == true)
    #expect(ScaledDecimal.refusal(of: "1E+123456")?.contains("an exponent of 6 digits") == true)
    #expect(ScaledDecimal.refusal(of: "12,5")?.hasPrefix("is not a decimal number") == true)
    #expect(ScaledDecimal.refusal(of: "12.30") == nil && ScaledDecimal.refusal(of: "1E+127") == nil)
    #expect(throws: AmberError.invalidValue(place: "decimal text", expected: "a decimal number",
                                            given: "\"\(String(repeating: "1", count: 40))\", which has 40 significant digits; a decimal holds at most 38")) {
        try Value.decimal(parsing: String(repeating: "1", count: 40))
    }
}
