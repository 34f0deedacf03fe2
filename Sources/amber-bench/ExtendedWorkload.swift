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
        return try compare("extended search", repetitions: repetitions, { try Context(store: store).fetch(extended).count },
                           against: { try Context(store: store).fetch(modelled).count })
    }
}
