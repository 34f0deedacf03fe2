import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Every model that binds writes itself to JSON and reads back as the same
/// model, and a store made with it reopens (seeded random models).
@Suite struct ModelReadBackTests {
    /// A value for an attribute of `type`, edges weighted in: huge and
    /// non-finite numbers, -0.0, far dates, scaled decimals, and some of the
    /// wrong type.
    static func value(for type: AttributeType, _ random: inout SplitMix64) -> Value {
        let doubles: [Double] = [0, -0.0, 1e39, -1e39, .infinity, -.infinity, .nan, 0.1, 1e308, 5e-324, 3.4028235e38, 16_777_217]
        switch (type, random.next() % 24) {
        case (_, 0): return [Value.int(Int64(bitPattern: random.next())), .string("x"), .double(doubles[Int(random.next() % 12)])][Int(random.next() % 3)]
        case (.integer16, _), (.integer32, _), (.integer64, _): return .int(Int64(Int32(truncatingIfNeeded: random.next())))
        case (.double, _), (.float, _):
            return random.next() % 2 == 0 ? .double(doubles[Int(random.next() % 12)]) : .double(Double(bitPattern: random.next()))
        case (.decimal, _): return .decimal(ScaledDecimal(["12.30", "-0.00", "1.2E+3", "0.0000001", "99999999999999999999.99"][Int(random.next() % 5)]) ?? ScaledDecimal(0))
        case (.date, _):
            let seconds = [-1e15, 1e15, -62_135_596_800, 253_402_300_799.999, 0, 978_307_200.5, Double(Int32(truncatingIfNeeded: random.next()))]
            return .date(Date(timeIntervalSince1970: seconds[Int(random.next() % 7)]))
        case (.string, _): return .string(["", "a\"b\\c", "é😀", "\u{0}"][Int(random.next() % 4)])
        case (.boolean, _): return .bool(random.next() % 2 == 0)
        case (.binary, _): return .binary(Data((0..<Int(random.next() % 5)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
        case (.uuid, _): return .uuid(UUID())
        case (.uri, _): return .uri(URL(string: "https://example.com/a?b=c#d") ?? URL(fileURLWithPath: "/"))
        default: return .null
        }
    }

    static func model(_ random: inout SplitMix64) -> ModelDescription {
        let types: [AttributeType] = [.integer16, .integer32, .integer64, .decimal, .double, .float, .string, .boolean, .date, .binary, .uuid, .uri]
        var entities: [EntityDescription] = []
        let count = Int(random.next() % 3) + 1
        for e in 0..<count {
            var attributes: [AttributeDescription] = []
            for a in 0..<Int(random.next() % 5) + 1 {
                var attribute = AttributeDescription("a\(a)", types[Int(random.next() % UInt64(types.count))])
                if random.next() % 3 == 0 { attribute = attribute.defaultValue(value(for: attribute.type, &random)) }
                if random.next() % 4 == 0 { attribute = attribute.min(value(for: attribute.type, &random)) }
                if random.next() % 4 == 0 { attribute = attribute.max(value(for: attribute.type, &random)) }
                if random.next() % 5 == 0 { attribute = attribute.required() }
                if random.next() % 6 == 0 { attribute = attribute.indexed() }
                attributes.append(attribute)
            }
            var entity = EntityDescription("E\(e)", attributes: attributes)
            if e > 0, random.next() % 2 == 0 {
                entity.relationships.append(Relationship.toOne("parent", "E0", inverse: "children\(e)"))
                entities[0].relationships.append(Relationship.toMany("children\(e)", "E\(e)", inverse: "parent"))
            }
            entities.append(entity)
        }
        return ModelDescription(entities: entities)
    }

    @Test("thousands of random models that bind read back from their own JSON with the same hash, and their stores reopen")
    func modelsReadBack() throws {
        var random = SplitMix64(seed: 31)
        var bound = 0, refused = 0, reopened = 0
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for round in 0..<9_000 {
            let description = Self.model(&random)
            guard let model = try? Model(description) else {
                refused += 1
                continue
            }
            bound += 1
            let json = model.description.jsonText()
            let error = amberError {
                let again = try Model(ModelDescription(json: Data(json.utf8)))
                #expect(again.versionHash == model.versionHash, "round \(round)")
                // The first write normalizes what the builder took (an integer default of a decimal, a
                // double of a float: readsBack checked both mean the same); from then on the text is fixed.
                let normalized = again.description.jsonText()
                #expect(try Model(ModelDescription(json: Data(normalized.utf8))).description.jsonText() == normalized, "round \(round)")
            }
            #expect(error == nil, "round \(round): \(json) does not read back: \(String(describing: error))")
            if round % 25 == 0 {
                let path = directory.appendingPathComponent("m\(round).amber").path
                let reopenError = amberError {
                    _ = try Store(path: path, model: model)
                    _ = try Store(openingExisting: path)
                }
                #expect(reopenError == nil, "round \(round): \(String(describing: reopenError))")
                reopened += 1
            }
        }
        #expect(bound > 1_000 && refused > 1_000, "bound \(bound), refused \(refused): the generator must reach both")
        #expect(reopened > 40)
    }

    @Test("the reported models: a float default of 1e39 and a date bound of -1e15 are refused or read back")
    func reportedModels() throws {
        let float = amberError { _ = try Model(ModelDescription { EntityDescription("E") { Attribute.float("f").defaultValue(.double(1e39)) } }) }
        #expect(float?.description.contains("E.f") == true, "\(String(describing: float))")
        let far = try Model(ModelDescription { EntityDescription("E") { Attribute.date("d").min(.date(Date(timeIntervalSince1970: -1e15))) } })
        let back = try Model(ModelDescription(json: Data(far.description.jsonText().utf8)))
        #expect(try back.entity(named: "E").attribute(named: "d").validation.minValue == .date(Date(timeIntervalSince1970: -1e15)))
        let infinite = try Model(ModelDescription { EntityDescription("E") { Attribute.float("f").defaultValue(.float(.infinity)) } })
        let again = try Model(ModelDescription(json: Data(infinite.description.jsonText().utf8)))
        #expect(try again.entity(named: "E").attribute(named: "f").defaultValue == .float(.infinity))
        let long = String(repeating: "n", count: 1 << 20)
        let named = amberError { _ = try Model(ModelDescription { EntityDescription("E") { Attribute.string(long) } }) }
        #expect(named.map { "\($0)".count < 1_000 } == true, "the message does not repeat a 1 MB name")
        #expect(named?.description.contains("longer than the 255 characters") == true)
    }
}

@Suite struct StoredLengthTests {
    @Test("a string or binary value longer than SQLite's length limit is refused at set, naming the attribute, without repeating it")
    func overlongValuesAreRefusedAtSet() throws {
        let context = Context(store: try Store.inMemory(model: try Model(ModelDescription {
            EntityDescription("Blob") { Attribute.binary("bytes") }
        })))
        let object = try context.insert("Blob")
        // calloc'd pages: a billion zero bytes cost no memory until touched.
        let error = amberError { try object.setValue(.binary(Data(count: AttributeType.maximumStoredLength + 1)), forKey: "bytes") }
        #expect(error?.description.contains("Blob.bytes") == true && error?.description.contains("SQLite's length limit") == true)
        #expect(try object.value(forKey: "bytes") == .null)
    }
}

@Suite struct ArchiveDateTests {
    /// An archive of an array holding one date with these seconds since 2001 (bits as written).
    static func archive(seconds: Double) -> Data {
        var bytes = Array("AMBR".utf8) + [1, 10, 1, 8]
        withUnsafeBytes(of: seconds.bitPattern.littleEndian) { bytes += $0 }
        return Data(bytes)
    }

    @Test("a stored archive holding a date no binding reads (NaN, infinity, year 506713) is an error, not a wrong date")
    func unreadableArchivedDatesAreErrors() throws {
        for seconds in [Double.nan, .infinity, -.infinity, 1.6e13, -1e15] {
            #expect(throws: PropertyListArchive.ArchiveError.self, "\(seconds)") { _ = try PropertyListArchive.decode(Self.archive(seconds: seconds)) }
        }
        let fine = try PropertyListArchive.decode(Self.archive(seconds: 812_345_678.5))
        #expect(fine == .array([.date(Date(timeIntervalSinceReferenceDate: 812_345_678.5))]))
    }
}
