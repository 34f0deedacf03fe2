import Foundation
import Testing
@testable import Amber
@testable import AmberValues

/// A small disk of its own (a tmpfs of `kilobytes`), mounted while the test
/// runs; nil where this process cannot mount one (not root).
final class SmallDisk {
    let url: URL

    init?(kilobytes: Int) {
        guard geteuid() == 0 else { return nil }
        url = temporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/mount")
        process.arguments = ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", url.path]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
    }

    deinit {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/umount")
        process.arguments = [url.path]
        if (try? process.run()) != nil { process.waitUntilExit() }
        try? FileManager.default.removeItem(at: url)
    }

    /// Fills the disk with a file of `bytes` (as much of it as fits).
    func fill(_ name: String, bytes: Int) {
        guard let file = fopen(url.appendingPathComponent(name).path, "w") else { return }
        defer { fclose(file) }
        let chunk = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<(bytes / chunk.count) where fwrite(chunk, 1, chunk.count, file) == chunk.count && fflush(file) == 0 {}
    }

    func files() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted() }
}

/// A disk that fills up says so, as a storage failure, and loses nothing: a
/// save writes nothing and keeps its changes to be saved again once there is
/// room; a store that cannot be made leaves nothing behind.
@Suite struct FullDiskTests {
    static func model() throws -> Model {
        try Model(ModelDescription { EntityDescription("Note") { Attribute.string("text") } })
    }

    @Test func aSaveOnAFullDiskWritesNothingAndCanBeMadeAgain() throws {
        guard let disk = SmallDisk(kilobytes: 512) else {
            print("FullDiskTests: no small disk can be mounted here (not root); skipped")
            return
        }
        let store = try Store(path: disk.url.appendingPathComponent("notes.amber").path, model: try Self.model())
        let context = Context(store: store)
        try context.insert("Note").setValue(.string("first"), forKey: "text")
        try context.save()
        disk.fill("filler", bytes: 1 << 20)
        for index in 0..<200 { try context.insert("Note").setValue(.string(String(repeating: "x", count: 2000) + "\(index)"), forKey: "text") }
        guard case .storageFailed(_, let message) = amberError({ try context.save() }) else {
            Issue.record("a save on a full disk did not fail as a storage failure")
            return
        }
        #expect(message == "the disk is full: nothing was written, and the context keeps its changes")
        #expect(context.hasChanges)
        #expect(try Context(store: store).count(FetchRequest("Note")) == 1)
        try FileManager.default.removeItem(at: disk.url.appendingPathComponent("filler"))
        try context.save()
        #expect(try Context(store: store).count(FetchRequest("Note")) == 201)
    }

    /// Folding the log into the file needs room: on a full disk it says so,
    /// and every save stays in the log, folded once there is room.
    @Test func aLogTheFullDiskRefusesIsReportedAndKept() throws {
        guard let disk = SmallDisk(kilobytes: 512) else {
            print("FullDiskTests: no small disk can be mounted here (not root); skipped")
            return
        }
        let path = disk.url.appendingPathComponent("notes.amber").path
        do {
            let store = try Store(path: path, model: try Self.model())
            let context = Context(store: store)
            for index in 0..<100 { try context.insert("Note").setValue(.string(String(repeating: "x", count: 2000) + "\(index)"), forKey: "text") }
            try context.save()
            disk.fill("filler", bytes: 1 << 20)
            guard case .storageFailed(_, let message) = amberError({ try store.foldLog() }) else {
                Issue.record("folding the log on a full disk did not fail as a storage failure")
                return
            }
            #expect(message.hasPrefix("the disk is full: every save is safe in the write-ahead log beside the file (\(path)-wal)"))
        }
        #expect(disk.files() == ["filler", "notes.amber", "notes.amber-shm", "notes.amber-wal"])
        try FileManager.default.removeItem(at: disk.url.appendingPathComponent("filler"))
        do {
            let store = try Store(path: path, model: try Self.model())
            #expect(try Context(store: store).count(FetchRequest("Note")) == 100)
            try store.foldLog()
        }
        #expect(disk.files() == ["notes.amber"])
    }

    @Test func aStoreThatCannotBeMadeLeavesNothing() throws {
        guard let disk = SmallDisk(kilobytes: 256) else {
            print("FullDiskTests: no small disk can be mounted here (not root); skipped")
            return
        }
        disk.fill("filler", bytes: 1 << 20)
        let error = amberError { _ = try Store(path: disk.url.appendingPathComponent("new.amber").path, model: try Self.model()) }
        guard case .storageFailed(_, let message) = error else {
            Issue.record("making a store on a full disk: \(String(describing: error))")
            return
        }
        #expect(message.hasSuffix(": no store was made"))
        #expect(disk.files() == ["filler"])
    }
}
