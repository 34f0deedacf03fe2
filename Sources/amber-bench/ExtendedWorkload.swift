import Amber
import Foundation

/// W12, an extended attribute: fetching the books whose extended key `rank`
/// is below a bound, against the same predicate on a modelled column holding
/// the same numbers, over N books of one extensible entity (so both fetches
/// read the same rows and differ only in what the predicate tests).
struct ExtendedWorkload {
    static let name = "W12 extended key vs modelled column"
    let n: Int
    let workspace: URL

    /// Medians of the extended-key fetch (as Amber's time) and the modelled one (as the reference), interleaved.
    func run(repetitions: Int) throws -> Result {
        let model = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer64("modelledRank")
            }.extensible()
        })
        let store = try Store(path: workspace.appendingPathComponent("extended.amber").path, model: model)
        let context = Context(store: store)
        for i in 0..<n {
            let book = try context.insert("Book")
            try book.setValue(.string("Book \(i)"), forKey: "title")
            try book.setValue(.int(Int64(i % 10_000)), forKey: "modelledRank")
            try book.setValue(.int(Int64(i % 10_000)), forExtendedKey: "rank")
            try book.setValue(.string(i % 2 == 0 ? "A" : "B"), forExtendedKey: "shelf")
        }
        try context.save()
        let extended = try FetchRequest("Book", where: "rank < %@", .int(100))
        let modelled = try FetchRequest("Book", where: "modelledRank < %@", .int(100))
        var fast: [Double] = [], slow: [Double] = []
        var counts: (Int, Int) = (0, 0)
        for _ in 0..<max(repetitions, 3) {
            slow.append(try Workloads.time { counts.0 = try Context(store: store).fetch(extended).count })
            fast.append(try Workloads.time { counts.1 = try Context(store: store).fetch(modelled).count })
        }
        guard counts.0 == counts.1, counts.0 > 0 else {
            throw AmberError.notAStore(path: "extended search", reason: "found \(counts.0) books, the modelled column \(counts.1)")
        }
        return Result(amber: median(slow), raw: median(fast))
    }
}
