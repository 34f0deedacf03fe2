import Amber
import AmberBenchRaw
import Foundation

/// W18, a store Core Data wrote: every page of `SampleModel2_V1.sqlite`
/// (4,970 pages, made by Core Data on an Apple system; in ../shared/coredata)
/// fetched through a new context of a store opened with the model it keeps,
/// and every value read (number, bookmark, content bytes, the book's key),
/// against a plain SQLite loop copying the same rows into structs.
struct CoreDataWorkload {
    static let name = "W18 Core Data store: fetch all pages + read"
    /// Where the fixture is: ../shared/coredata beside the repository.
    let fixtures: URL
    let workspace: URL

    /// The medians, or nil when the fixture is not there.
    func run(repetitions: Int) throws -> Result? {
        let source = fixtures.appendingPathComponent("CoreDataPlus/SampleModel2_V1.sqlite")
        guard FileManager.default.fileExists(atPath: source.path) else { return nil }
        let path = workspace.appendingPathComponent("SampleModel2_V1.sqlite").path
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try? FileManager.default.removeItem(atPath: path + suffix)
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: path + suffix)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path + suffix)
        }
        // The app's own classes: their archives are handed over as the stored bytes.
        let registry = Registry()
        for name in ["CoverTransformer", "ContentTransformer"] {
            try registry.register(Transformer(name: name, from: "PropertyList", to: "Binary", source: "bench", forward: { $0 }, reverse: { $0 }))
        }
        let store = try Store(openingExisting: path, registry: registry)
        let page = try store.model.entity(named: "Page")
        let number = try page.attribute(named: "number"), bookmarked = try page.attribute(named: "isBookmarked")
        let content = try page.attribute(named: "content"), book = try page.relationship(named: "book")
        var times: ([Double], [Double]) = ([], [])
        var sums: (Double, Double) = (0, 0)
        for _ in 0..<max(repetitions, 3) {
            // Released after the timing, as the raw side frees its rows after its own (the benchmark's rule).
            var held: (context: Context?, pages: [ManagedObject]) = (nil, [])
            times.0.append(try Workloads.time {
                let reader = Context(store: store)
                held = (reader, try reader.fetch(FetchRequest("Page")))
                var sum = 0.0
                for object in held.pages {
                    if case .int(let value) = try object.value(for: number) { sum += Double(value) }
                    if case .binary(let bytes) = try object.value(for: content) { sum += Double(bytes.count) }
                    _ = try object.value(for: bookmarked)
                    _ = try object.object(for: book)?.objectID
                }
                sums.0 = sum
            })
            withExtendedLifetime(held) {}
            var checksum = 0.0
            let elapsed = bench_raw_coredata_pages(path, &checksum)
            guard elapsed >= 0 else { throw AmberError.notAStore(path: path, reason: "the raw loop could not read it") }
            times.1.append(elapsed)
            sums.1 = checksum
        }
        guard sums.0 == sums.1, sums.0 > 0 else {
            throw AmberError.notAStore(path: path, reason: "Amber's checksum \(sums.0), the raw loop's \(sums.1)")
        }
        return Result(amber: median(times.0), raw: median(times.1))
    }
}

/// W19, moving over: a store in Core Data's layout of N items (title,
/// price, date, 16 bytes) copied into a new Amber store
/// (`Store.importCoreDataStore`, its layout checked, its counts checked),
/// against raw SQLite copying the same rows into the same table layout.
struct CoreDataImportWorkload {
    static let name = "W19 import a Core Data store of N objects"
    let n: Int
    let workspace: URL

    func run(repetitions: Int) throws -> Result {
        let source = workspace.appendingPathComponent("import-source.sqlite").path
        guard bench_raw_coredata_make(source, Int64(n)) == 0 else { throw AmberError.notAStore(path: source, reason: "could not be made") }
        let model = try Model(ModelDescription {
            EntityDescription("Item") {
                Attribute.string("title")
                Attribute.double("price")
                Attribute.date("published")
                Attribute.binary("code")
            }
        })
        var times: ([Double], [Double]) = ([], [])
        for repetition in 0..<max(repetitions, 3) {
            let amber = workspace.appendingPathComponent("imported-\(repetition).amber").path
            var counts: [String: Int] = [:]
            times.0.append(try Workloads.time { counts = try Store.importCoreDataStore(at: source, into: amber, model: model) })
            guard counts["Item"] == n else { throw AmberError.notAStore(path: amber, reason: "\(counts) objects copied, not \(n)") }
            let raw = workspace.appendingPathComponent("imported-\(repetition).raw").path
            let elapsed = bench_raw_coredata_copy(source, raw)
            guard elapsed >= 0 else { throw AmberError.notAStore(path: raw, reason: "the raw copy failed") }
            times.1.append(elapsed)
            for file in [amber, amber + "-wal", amber + "-shm", raw, raw + "-wal", raw + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
        }
        return Result(amber: median(times.0), raw: median(times.1))
    }
}
