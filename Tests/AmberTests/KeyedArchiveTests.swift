import Foundation
import Testing
@testable import AmberTransformers
@testable import AmberValues

/// Keyed archives (what Core Data's secure unarchiver stores): values that
/// Foundation's own NSKeyedArchiver wrote read back as the values archived,
/// and hostile archives are refused with the reason, never a crash.
@Suite struct KeyedArchiveTests {
    /// A random property-list value, and the Foundation object that archives as it.
    private static func randomValue(_ generator: inout SplitMix64, depth: Int = 0) -> (Value, Any) {
        let kinds = depth < 3 ? 10 : 7
        switch Int.random(in: 0..<kinds, using: &generator) {
        case 0:
            let text = String((0..<Int.random(in: 0..<12, using: &generator)).map { _ in
                "aé𝄞 Z\"\\\n".randomElement(using: &generator) ?? "a"
            })
            return (.string(text), NSString(string: text))
        case 1:
            let number = Int64.random(in: Int64.min...Int64.max, using: &generator) >> Int64.random(in: 0..<63, using: &generator)
            return (.int(number), NSNumber(value: number))
        case 2:
            let number = Double.random(in: -1e9...1e9, using: &generator)
            return (.double(number), NSNumber(value: number))
        case 3:
            let flag = Bool.random(using: &generator)
            return (.bool(flag), NSNumber(value: flag))
        case 4:
            let bytes = Data((0..<Int.random(in: 0..<40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            return (.binary(bytes), NSData(data: bytes))
        case 5:
            let date = Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000_000...1_000_000_000, using: &generator)) / 8)
            return (.date(date), NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate))
        case 6:
            var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let uuid = UUID(uuid: bytes.withUnsafeMutableBytes { $0.loadUnaligned(as: uuid_t.self) })
            return (.uuid(uuid), NSUUID(uuidString: uuid.uuidString) ?? NSUUID())
        case 7:
            let members = (0..<Int.random(in: 0..<5, using: &generator)).map { _ in randomValue(&generator, depth: depth + 1) }
            return (.array(members.map(\.0)), NSArray(array: members.map(\.1)))
        case 8:
            var values: [String: Value] = [:]
            let objects = NSMutableDictionary()
            for i in 0..<Int.random(in: 0..<5, using: &generator) {
                let (value, object) = randomValue(&generator, depth: depth + 1)
                values["k\(i)"] = value
                objects[NSString(string: "k\(i)")] = object
            }
            return (.dictionary(values), objects)
        default:
            let url = URL(string: "https://example.com/a/\(Int.random(in: 0..<1000, using: &generator))?q=1") ?? URL(fileURLWithPath: "/")
            return (.uri(url), url as NSURL)
        }
    }

    @Test("what Foundation's NSKeyedArchiver wrote reads back as the values it archived")
    func foundationArchivesReadBack() throws {
        var generator = SplitMix64(seed: 0x5EC0_DE)
        for _ in 0..<300 {
            let (expected, object) = Self.randomValue(&generator)
            let data = try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: false)
            #expect(try KeyedArchive(data).rootValue() == expected, "\(object)")
            // The archive transformer (what an imported NSSecureUnarchiveFromData attribute uses) reads them too.
            #expect(try PropertyListArchive.transformer.reverseFunction?(.binary(data)) == expected)
        }
    }

    @Test("what Amber archives, Foundation's NSKeyedUnarchiver and Amber's reader read back as the values archived")
    func amberArchivesReadBack() throws {
        func holdsURL(_ value: Value) -> Bool {
            switch value {
            case .uri: true
            case .array(let members): members.contains(where: holdsURL)
            case .dictionary(let members): members.values.contains(where: holdsURL)
            default: false
            }
        }
        var generator = SplitMix64(seed: 0xA4C_41FE)
        var compared = 0
        for _ in 0..<300 {
            let (value, object) = Self.randomValue(&generator)
            guard !holdsURL(value) else {
                // Amber's property-list values hold no URLs; an archive of one is refused, not written otherwise.
                #expect(throws: KeyedArchive.Failure.self) { try KeyedArchive.archive(value) }
                continue
            }
            let data = try KeyedArchive.archive(value)
            #expect(try KeyedArchive(data).rootValue() == value)
            let decoded = try NSKeyedUnarchiver.unarchiveTopLevelObjectWithData(data)
            #expect((decoded as? NSObject)?.isEqual(object) == true, "\(value) read by Foundation as \(String(describing: decoded))")
            compared += 1
        }
        #expect(compared > 200)
        // Lists of every length around 256 and 65,536 objects, where the size of a reference grows: Foundation reads each.
        for count in Array(100...300) + Array(32_700...32_800) where count < 300 || count % 7 == 0 {
            let value = Value.array((0..<count).map { .string("s\($0)") })
            let decoded = try NSKeyedUnarchiver.unarchiveTopLevelObjectWithData(KeyedArchive.archive(value)) as? NSArray
            #expect(decoded?.count == count, "\(count) strings")
        }
        // A Float stays a four-byte real, so it reads back as a Float, not a Double.
        #expect(try KeyedArchive(KeyedArchive.archive(.array([.float(1.5), .double(1.5)]))).rootValue() == .array([.float(1.5), .double(1.5)]))
    }

    @Test("an archived URL relative to a base reads as the URL it resolves to")
    func relativeURL() throws {
        let base = try #require(URL(string: "https://example.com/a/"))
        let url = try #require(URL(string: "b/c?q=1", relativeTo: base))
        let data = try NSKeyedArchiver.archivedData(withRootObject: url as NSURL, requiringSecureCoding: false)
        #expect(try KeyedArchive(data).rootValue() == .uri(try #require(URL(string: "https://example.com/a/b/c?q=1"))))
    }

    /// A keyed archive of `objects` (plist items as this test writes them) with root UID `root`.
    private static func archive(objects: [Item], root: Int = 1) -> Data {
        var list = ListWriter()
        let objectRefs = objects.map { list.add($0) }
        let top = list.add(.dictionary([("$archiver", .string("NSKeyedArchiver")), ("$version", .int(100000)),
                                        ("$top", .dictionary([("root", .uid(root))])), ("$objects", .refs(objectRefs))]))
        return list.finish(top: top)
    }

    @Test("hostile archives are refused with the reason, never a crash")
    func hostileArchives() throws {
        let arrayClass = Item.dictionary([("$classname", .string("NSArray")), ("$classes", .strings(["NSArray", "NSObject"]))])
        func refused(_ data: Data, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(sourceLocation: sourceLocation) {
                try KeyedArchive(data).rootValue()
            } throws: { error in
                "\(error)".contains(text)
            }
        }
        // An array that contains itself.
        refused(Self.archive(objects: [.string("$null"), .dictionary([("NS.objects", .uids([1])), ("$class", .uid(2))]), arrayClass]),
                "contains itself")
        // A reference to an object that does not exist.
        refused(Self.archive(objects: [.string("$null"), .dictionary([("NS.objects", .uids([9999])), ("$class", .uid(2))]), arrayClass]),
                "UID 9999 names none")
        refused(Self.archive(objects: [.string("$null")], root: 7), "no $top.root")
        // A class Amber does not read is named.
        let custom = Item.dictionary([("$classname", .string("App.Cover")), ("$classes", .strings(["App.Cover", "NSObject"]))])
        let cover = Self.archive(objects: [.string("$null"), .dictionary([("text", .uid(0)), ("$class", .uid(2))]), custom])
        #expect {
            try KeyedArchive(cover).rootValue()
        } throws: { error in
            (error as? KeyedArchive.Failure)?.unreadClass == "App.Cover"
        }
        // Nested deeper than the limit: each array holds the next.
        var deep: [Item] = [.string("$null"), arrayClass]
        for level in 0..<100 { deep.append(.dictionary([("NS.objects", .uids(level < 99 ? [deep.count + 1] : [])), ("$class", .uid(1))])) }
        refused(Self.archive(objects: deep, root: 2), "nested deeper")
        // Shared objects that expand past a million values: each array holds the next one twice.
        var wide: [Item] = [.string("$null"), arrayClass]
        for level in 0..<40 { wide.append(.dictionary([("NS.objects", .uids(level < 39 ? [wide.count + 1, wide.count + 1] : [])), ("$class", .uid(1))])) }
        refused(Self.archive(objects: wide, root: 2), "more than 1000000 values")
        // Objects that share their bytes to multiply them: many table entries naming one large array.
        var shared = ListWriter()
        let element = shared.add(.string("x"))
        let big = shared.add(.refs(Array(repeating: element, count: 2000)))
        shared.offsets += Array(repeating: shared.offsets[big], count: 500)
        refused(shared.finish(top: big), "objects share their bytes")
        // An archived object with more keys than any class has.
        let manyKeys = Item.dictionary((0..<300).map { ("k\($0)", .int(1)) } + [("$class", .uid(2))])
        refused(Self.archive(objects: [.string("$null"), manyKeys, arrayClass]), "has 301 keys")
        // A data object claiming a gigabyte, a truncated file, a damaged trailer.
        var huge = ListWriter()
        let blob = huge.raw([0x4F, 0x12, 0x40, 0x00, 0x00, 0x00])
        refused(huge.finish(top: blob), "a length of 1073741824")
        let good = try NSKeyedArchiver.archivedData(withRootObject: NSArray(array: [NSString(string: "a")]), requiringSecureCoding: false)
        refused(good.prefix(good.count - 5), "binary property list")
        refused(Data("bplist00".utf8) + Data(repeating: 0xFF, count: 40), "trailer")
        refused(Data(repeating: 0, count: 100), "not a bplist00")
    }

    @Test("the archive transformer names the class a Core Data store's archive holds when it is not one Amber reads")
    func storedCustomClassIsNamed() throws {
        let fixture = try CoreDataFixture("CoreDataPlus/SampleModel2_V1.sqlite")
        defer { fixture.remove() }
        guard case .binary(let cover) = try fixture.rows("SELECT ZCOVER FROM ZBOOK LIMIT 1")[0][0] else {
            Issue.record("no cover")
            return
        }
        #expect {
            try PropertyListArchive.transformer.reverseFunction?(.binary(cover))
        } throws: { error in
            "\(error)".contains("an archived CoreDataPlus_Tests.Cover, which is not a property-list class Amber reads")
        }
    }
}

/// What the hostile-archive test writes: property-list items, containers holding other items.
private indirect enum Item {
    case string(String)
    case int(Int64)
    case uid(Int)
    case uids([Int])
    case strings([String])
    case refs([Int])
    case dictionary([(String, Item)])
}

/// Writes a binary property list by hand (one-byte references and offsets
/// where they fit), so tests can make archives no archiver would.
private struct ListWriter {
    var body = [UInt8](BinaryPropertyList.magic)
    var offsets: [Int] = []

    /// Appends raw object bytes; returns the object's index.
    mutating func raw(_ bytes: [UInt8]) -> Int {
        offsets.append(body.count)
        body += bytes
        return offsets.count - 1
    }

    mutating func add(_ item: Item) -> Int {
        switch item {
        case .string(let text):
            let n = text.utf8.count
            return raw((n < 15 ? [0x50 | UInt8(n)] : [0x5F, 0x10, UInt8(n)]) + Array(text.utf8))
        case .int(let number): return raw([0x13] + withUnsafeBytes(of: number.bigEndian) { Array($0) })
        case .uid(let uid): return raw([0x83] + withUnsafeBytes(of: UInt32(uid).bigEndian) { Array($0) })
        case .uids(let uids): return container(0xA0, uids.map { add(.uid($0)) })
        case .strings(let texts): return container(0xA0, texts.map { add(.string($0)) })
        case .refs(let refs): return container(0xA0, refs)
        case .dictionary(let pairs):
            let keys = pairs.map { add(.string($0.0)) }, values = pairs.map { add($0.1) }
            return container(0xD0, keys + values, count: pairs.count)
        }
    }

    /// A container of `refs` (two-byte references), with marker `kind`.
    private mutating func container(_ kind: UInt8, _ refs: [Int], count: Int? = nil) -> Int {
        let n = count ?? refs.count
        let head: [UInt8] = n < 15 ? [kind | UInt8(n)] : [kind | 0x0F, 0x11, UInt8(n >> 8), UInt8(n & 0xFF)]
        return raw(head + refs.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
    }

    /// The list's bytes: objects, a table of four-byte offsets, the trailer.
    mutating func finish(top: Int) -> Data {
        let table = body.count
        for offset in offsets { body += withUnsafeBytes(of: UInt32(offset).bigEndian) { Array($0) } }
        body += [0, 0, 0, 0, 0, 0, 4, 2]
        for field in [offsets.count, top, table] { body += withUnsafeBytes(of: UInt64(field).bigEndian) { Array($0) } }
        return Data(body)
    }
}
