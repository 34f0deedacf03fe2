import Amber
import Foundation

/// W10, a live query: a one-object save while a live query holds all N
/// objects. Its ratio is to the same save with no live query: following a
/// change must cost what changed, not what the results hold.
struct LiveQueryWorkload {
    static let name = "W10 one-object save, live query over N"
    let n: Int
    let workspace: URL
    /// Saves measured on each side per repetition (more for profiling).
    var rounds = 40

    /// Medians of saves with the live query (as Amber's time) and without it (as the reference), interleaved.
    func run(repetitions: Int) throws -> Result {
        let (model, item, name, number) = try MergeWorkload.items()
        var following: [Double] = [], alone: [Double] = []
        for repetition in 0..<repetitions {
            let store = try Store(path: workspace.appendingPathComponent("live\(repetition).amber").path, model: model)
            let context = Context(store: store)
            try context.insert(item, setting: [name, number], to: (0..<n).flatMap { [Value.string("item \($0)"), .int(Int64($0))] })
            try context.save()
            let request = FetchRequest("Item", sortedBy: [.ascending("number")])
            let objects = try context.fetch(request)
            var moved = 0
            // Each save moves one object from the front to the back: an insertion and a removal at the far ends.
            for round in 0..<rounds {
                let object = objects[round]
                try object.setValue(.int(Int64(n + round)), for: number)
                alone.append(try Workloads.time { try context.save() })
            }
            let query = try LiveQuery(request, in: context)
            query.onChange = { moved += $0.moved.count }
            for round in rounds..<2 * rounds {
                try objects[round].setValue(.int(Int64(n + round)), for: number)
                following.append(try Workloads.time { try context.save() })
            }
            guard moved == rounds, query.count == n, query.object(at: n - 1) === objects[2 * rounds - 1] else {
                throw AmberError.notAStore(path: "live query", reason: "followed \(moved) of \(rounds) moves")
            }
        }
        return Result(amber: median(following), raw: median(alone))
    }
}
