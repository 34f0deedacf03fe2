import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

@Suite struct StructLayoutTests {
    /// Struct classes and the C declarations they must match, padding and nesting included.
    static let declarations: [(ValueClassDescription, String)] = [
        (.structure(name: "Color", fields: ["r", "g", "b", "a"].map { FieldDescription($0, .float) }),
         "struct Color { float r, g, b, a; };"),
        (.structure(name: "Rect", fields: ["x", "y", "w", "h"].map { FieldDescription($0, .double) }),
         "struct Rect { double x, y, w, h; };"),
        (.structure(name: "Padded", fields: [.init("a", .int8), .init("b", .int64), .init("c", .int16)]),
         "struct Padded { int8_t a; int64_t b; int16_t c; };"),
        (.structure(name: "Mixed", fields: [.init("flag", .bool), .init("d", .double), .init("u", .uint8), .init("i", .int32),
                                            .init("w", .uint16), .init("q", .uint64), .init("v", .uint32)]),
         "struct Mixed { bool flag; double d; uint8_t u; int32_t i; uint16_t w; uint64_t q; uint32_t v; };"),
        (.structure(name: "Nested", fields: [.init("tag", .int8), .init("inner", .structure("Padded")), .init("f", .float)]),
         "struct Nested { int8_t tag; struct Padded inner; float f; };"),
        (.structure(name: "Deep", fields: [.init("c", .structure("Color")), .init("n", .structure("Nested")), .init("b", .bool)]),
         "struct Deep { struct Color c; struct Nested n; bool b; };"),
        (.structure(name: "Bytes", fields: [.init("a", .uint8), .init("b", .int8), .init("c", .bool)]),
         "struct Bytes { uint8_t a; int8_t b; bool c; };"),
    ]

    @Test func layoutsMatchTheCCompiler() throws {
        let registry = Registry()
        for (description, _) in Self.declarations { try registry.declare(description) }
        let expected = try compileAndRunLayoutProgram()
        for (description, _) in Self.declarations {
            let layout = try #require(registry.structClass(named: description.name))
            let actual = "\(layout.name) \(layout.size) \(layout.alignment) " + layout.fields.map { String($0.offset) }.joined(separator: " ")
            #expect(actual == expected[description.name], "\(description.name)")
        }
    }

    @Test func fieldValuesRoundTripThroughBytes() throws {
        let registry = Registry()
        for (description, _) in Self.declarations { try registry.declare(description) }
        let padded = try #require(registry.structClass(named: "Padded"))
        let nested = try #require(registry.structClass(named: "Nested"))
        let inner = try padded.value(["a": -3, "b": .int(Int64.max), "c": 300])
        let value = try nested.value(["tag": 7, "inner": inner, "f": 1.5])
        #expect(try nested.fieldValues(of: value) == ["tag": 7, "inner": inner, "f": .float(1.5)])
        // A nested struct may be given as a dictionary of its fields.
        #expect(try nested.value(["tag": 7, "inner": ["a": -3, "b": .int(Int64.max), "c": 300], "f": 1.5]) == value)
        #expect(amberError { _ = try padded.value(["a": 300, "b": 0, "c": 0]) }
            == .invalidValue(place: "Padded.a", expected: "int8 in -128...127", given: "Integer 300"))
        #expect(amberError { _ = try padded.value(["a": 1, "b": 0]) }
            == .invalidValue(place: "Padded.c", expected: "a value for every field", given: "none"))
        #expect(amberError { _ = try padded.value(["a": 1, "b": 0, "c": 0, "z": 1]) } != nil)
    }

    @Test func declarationsAreChecked() {
        let registry = Registry()
        #expect(amberError { try registry.declare(.structure(name: "Outer", fields: [.init("x", .structure("Missing"))])) }?
            .description == "Outer.x: Missing: no such struct class (declare nested structs first)")
        #expect(amberError { try registry.declare(.structure(name: "Empty", fields: [])) } != nil)
        #expect(amberError { try registry.declare(.structure(name: "Twice", fields: [.init("x", .int8), .init("x", .int8)])) }?
            .description == "Twice.x: duplicate field name")
        #expect(amberError { try registry.declare(.opaque(name: "Zero", size: 0)) } != nil)
        #expect(amberError { try registry.declare(.opaque(name: "bad name", size: nil)) } != nil)
    }

    /// Compiles a C program printing `name sizeof _Alignof offsetof...` for every declaration.
    private func compileAndRunLayoutProgram() throws -> [String: String] {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var source = "#include <stdio.h>\n#include <stdint.h>\n#include <stdbool.h>\n#include <stddef.h>\n"
        source += Self.declarations.map(\.1).joined(separator: "\n") + "\nint main(void) {\n"
        for (description, _) in Self.declarations {
            guard case .structure(let name, let fields) = description else { continue }
            let offsets = fields.map { "(int)offsetof(struct \(name), \($0.name))" }
            source += "  printf(\"\(name) %d %d" + String(repeating: " %d", count: fields.count)
                + "\\n\", (int)sizeof(struct \(name)), (int)_Alignof(struct \(name)), \(offsets.joined(separator: ", ")));\n"
        }
        source += "  return 0;\n}\n"
        let file = directory.appendingPathComponent("layout.c")
        let binary = directory.appendingPathComponent("layout")
        try source.write(to: file, atomically: true, encoding: .utf8)
        try run("/usr/bin/env", ["cc", "-std=c11", "-o", binary.path, file.path])
        let output = try run(binary.path, [])
        return Dictionary(uniqueKeysWithValues: output.split(separator: "\n").map { line in
            (String(line.split(separator: " ")[0]), String(line))
        })
    }

    @discardableResult
    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(executable) \(arguments)")
        return String(decoding: data, as: UTF8.self)
    }
}

@Suite struct ArchiveTests {
    static let sample: Value = [
        "title": "Crème", "count": .int(-12345678901), "ratio": 0.25, "small": .float(-0.5), "flag": false,
        "nothing": .null, "bytes": .binary(Data([0, 1, 2, 3])), "when": .date(Date(timeIntervalSinceReferenceDate: -1e9)),
        "id": .uuid(UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8")!),
        "nested": [[1, 2], ["deep": [true, "x"]], []],
    ]

    @Test func roundTripsAndIsDeterministic() throws {
        let encoded = try PropertyListArchive.encode(Self.sample)
        #expect(try PropertyListArchive.decode(encoded) == Self.sample)
        #expect(try PropertyListArchive.encode(Self.sample) == encoded, "sorted keys: same value, same bytes")
        #expect(Array(encoded.prefix(5)) == Array("AMBR".utf8) + [1])
        for extreme: Value in [.int(Int64.min), .int(Int64.max), .double(.infinity), .double(-0.0), .string("")] {
            #expect(try PropertyListArchive.decode(PropertyListArchive.encode(extreme)) == extreme)
        }
    }

    @Test func refusesNonPlistValuesAndDeepNesting() {
        #expect(throws: PropertyListArchive.ArchiveError.self) { try PropertyListArchive.encode(.decimal(1)) }
        var deep: Value = 1
        for _ in 0..<100 { deep = [deep] }
        #expect(throws: PropertyListArchive.ArchiveError.self) { try PropertyListArchive.encode(deep) }
        // 100 nested array headers, hand-made: the decoder refuses them too.
        let hostile = Data(Array("AMBR".utf8) + [1] + Array(repeating: [10, 1], count: 100).flatMap { $0 } + [0])
        #expect(throws: PropertyListArchive.ArchiveError.self) { try PropertyListArchive.decode(hostile) }
    }

    @Test func everyTruncationIsAnError() throws {
        let encoded = [UInt8](try PropertyListArchive.encode(Self.sample))
        for length in 0..<encoded.count {
            #expect(throws: PropertyListArchive.ArchiveError.self) { try PropertyListArchive.decode(Data(encoded[0..<length])) }
        }
        #expect(throws: PropertyListArchive.ArchiveError.self) { try PropertyListArchive.decode(Data(encoded + [0])) }
    }

    @Test func hugeDeclaredLengthsAllocateNothing() {
        // A string claiming 2^62 bytes, a list claiming 2^62 items: refused before any allocation.
        let huge: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40]
        for tag: UInt8 in [6, 7, 10, 11] {
            #expect(throws: PropertyListArchive.ArchiveError.self) {
                try PropertyListArchive.decode(Data(Array("AMBR".utf8) + [1, tag] + huge))
            }
        }
        // An 11-byte varint and invalid UTF-8.
        #expect(throws: PropertyListArchive.ArchiveError.self) {
            try PropertyListArchive.decode(Data(Array("AMBR".utf8) + [1, 3] + Array(repeating: 0xFF, count: 10) + [1]))
        }
        #expect(throws: PropertyListArchive.ArchiveError.self) {
            try PropertyListArchive.decode(Data(Array("AMBR".utf8) + [1, 6, 2, 0xC3, 0x28]))
        }
        #expect(throws: PropertyListArchive.ArchiveError.self) {
            try PropertyListArchive.decode(Data(Array("AMBR".utf8) + [1, 11, 2, 1, 0x61, 0, 1, 0x61, 0]))  // duplicate key
        }
    }

    @Test func survivesRandomAndMutatedInput() throws {
        var generator = SplitMix64(seed: 0xA3B3_C0DE)
        let valid = [UInt8](try PropertyListArchive.encode(Self.sample))
        var decodedSomething = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                // Mutations of a valid archive: flip, insert or delete a few bytes.
                bytes = valid
                for _ in 0..<(1 + Int(generator.next() % 4)) {
                    let at = Int(generator.next() % UInt64(bytes.count))
                    switch generator.next() % 3 {
                    case 0: bytes[at] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
                    case 1: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: at)
                    default: if bytes.count > 1 { bytes.remove(at: at) }
                    }
                }
            } else {
                // Random bytes behind a valid header, so the decoder gets past the magic.
                bytes = Array("AMBR".utf8) + [1] + (0..<Int(generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            }
            if (try? PropertyListArchive.decode(Data(bytes))) != nil { decodedSomething += 1 }
        }
        // Some inputs are valid archives by chance; what matters is that none crashed.
        #expect(decodedSomething < 20_000)
    }
}

/// A small, seedable generator so the fuzz corpus is the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Custom values keep up to 16 bytes inline and more in a Data: either way
/// the bytes read back exactly, and equality and hashing depend only on the
/// class name and the bytes.
@Test func customValuesKeepTheirBytesExactlyInlineOrNot() {
    var random = SplitMix64(seed: 7)
    for length in 0...40 {
        let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
        let fromData = CustomValue(className: "Blob", bytes: bytes)
        let copied = bytes.withUnsafeBytes { CustomValue(className: "Blob", copying: $0) }
        #expect(fromData.bytes == bytes)
        #expect(fromData.count == length)
        #expect(copied.withUnsafeBytes { Data($0) } == bytes)
        #expect(fromData == copied)
        #expect(fromData.hashValue == copied.hashValue)
        #expect(CustomValue(className: "Other", bytes: bytes) != fromData)
        if length > 0 {
            var changed = bytes
            changed[length - 1] ^= 1
            #expect(CustomValue(className: "Blob", bytes: changed) != fromData)
        }
        // Trailing zeros are bytes too: a shorter value is a different value.
        #expect(CustomValue(className: "Blob", bytes: bytes + [0]) != fromData)
    }
}
