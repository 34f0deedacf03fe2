import Foundation
import Testing
@testable import Amber
@testable import AmberValues

/// A read-only disk: a read-only bind mount of a folder `setUp` fills;
/// nil where this process cannot mount one (not root).
private final class ReadOnlyFolder {
    let url: URL
    private let source: URL

    init?(holding setUp: (URL) throws -> Void) rethrows {
        source = temporaryDirectory()
        url = temporaryDirectory()
        try setUp(source)
        guard geteuid() == 0, Self.run("/bin/mount", "--bind", source.path, url.path) else { return nil }
        guard Self.run("/bin/mount", "-o", "remount,ro,bind", url.path) else {
            _ = Self.run("/bin/umount", url.path)
            return nil
        }
    }

    deinit {
        _ = Self.run("/bin/umount", url.path)
        try? FileManager.default.removeItem(at: url)
        try? FileManager.default.removeItem(at: source)
    }

    private static func run(_ tool: String, _ arguments: String...) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

/// Stores this process cannot write open read-only, are read and checked
/// there, and refuse every write by saying so; checking a store leaves no
/// files beside it.
@Suite struct ReadOnlyStoreTests {
    static func model(extra: Bool = false) throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Note") {
                Attribute.string("text")
                if extra { Attribute.integer64("rank") }
            }
        })
    }

    static func fill(_ folder: URL) throws {
        let context = Context(store: try Store(path: folder.appendingPathComponent("notes.amber").path, model: try model()))
        for index in 0..<5 {
            try context.insert("Note").setValue(.string("note \(index)"), forKey: "text")
        }
        try context.save()
    }

    @Test func checkingAStoreLeavesNothingBesideIt() throws {
        let folder = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.fill(folder)
        let path = folder.appendingPathComponent("notes.amber").path
        #expect(try Store.checkIntegrity(ofStoreAt: path) == [])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["notes.amber"])
    }

    @Test func aStoreOnAReadOnlyDiskOpensReadOnly() throws {
        guard let folder = try ReadOnlyFolder(holding: Self.fill) else {
            print("ReadOnlyStoreTests: no read-only disk can be mounted here (not root); skipped")
            return
        }
        let path = folder.url.appendingPathComponent("notes.amber").path
        let store = try Store(path: path, model: try Self.model())
        let context = Context(store: store)
        #expect(try context.count(FetchRequest("Note")) == 5)
        try context.insert("Note").setValue(.string("more"), forKey: "text")
        guard case .unsupported(_, let capability) = amberError({ try context.save() }) else {
            Issue.record("a save in a read-only folder was not refused")
            return
        }
        #expect(capability.contains("saving (it was opened read-only"))
        #expect(context.hasChanges)  // kept for a save elsewhere
        #expect(amberError({ _ = try context.batchUpdate(FetchRequest("Note"), set: ["text": .value(.string("x"))]) })?
            .description.contains("opened read-only") == true)
        #expect(try Store(openingExisting: path).model.entities.map(\.name) == ["Note"])
        #expect(try Store.checkIntegrity(ofStoreAt: path) == [])
        // Another model would need a migration, which cannot be written.
        guard case .migrationFailed(_, let problems) = amberError({ _ = try Store(path: path, model: try Self.model(extra: true)) }) else {
            Issue.record("a store needing a migration in a read-only folder opened")
            return
        }
        #expect(problems.first?.contains("needs migrating, but it was opened read-only") == true)
        // A new store cannot be made there, and the error says why.
        let refused = amberError { _ = try Store(path: folder.url.appendingPathComponent("new.amber").path, model: try Self.model()) }
        #expect(refused?.description.contains("cannot write the folder") == true, "\(String(describing: refused))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["notes.amber"])
    }
}
