import Amber
import ArgumentParser
import Foundation

/// W21, a fetch that sees pending changes: a filtered, sorted fetch of the
/// N stored items while the context holds N/100 (at most 1,000) unsaved new
/// items and as many unsaved changes. Its ratio is to the same fetch asking
/// the store alone in the same context: judging the pending objects in
/// memory and placing them must cost what changed, not what was stored.
struct PendingFetchWorkload {
    static let name = "W21 filtered fetch with pending changes"
    let n: Int
    let workspace: URL
    /// Fetches measured on each side per repetition.
    var rounds = 5

    func run(repetitions: Int) throws -> Result {
        let (model, item, name, number) = try MergeWorkload.items()
        guard n >= 2 else { throw ValidationError("W21 needs N of 2 or more") }
        let pending = min(1_000, max(1, n / 100))
        var including: [Double] = [], storeOnly: [Double] = []
        for repetition in 0..<repetitions {
            let store = try Store(path: workspace.appendingPathComponent("pending\(repetition).amber").path, model: model)
            let context = Context(store: store)
            try context.insert(item, setting: [name, number], to: (0..<n).flatMap { [Value.string("item \($0)"), .int(Int64($0))] })
            try context.save()
            // Half the new items and half the changed ones land inside the filter, the rest outside it.
            var added: [Value] = []
            for i in 0..<pending {
                let value = i % 2 == 0 ? i * 97 % (n / 2) : n + i
                added += [.string("new \(i)"), .int(Int64(value))]
            }
            try context.insert(item, setting: [name, number], to: added)
            var changing = try FetchRequest("Item", where: "number < %@", .int(Int64(pending)))
            changing.includesPendingChanges = false  // saved items only
            for object in try context.fetch(changing) {
                guard case .int(let value) = try object.value(for: number) else { continue }
                try object.setValue(.int(value % 2 == 0 ? Int64(n) - 1 - value : value + 1), for: number)
            }
            var request = try FetchRequest("Item", where: "number < %@", .int(Int64(n / 2)), sortedBy: [.ascending("number")])
            // What the context sees: each stored item by its current number, and the new ones inside the filter.
            let changedInside = (0..<n).count { v in (v < pending ? (v % 2 == 0 ? n - 1 - v : v + 1) : v) < n / 2 }
            let seen = changedInside + (pending + 1) / 2, stored = n / 2
            for round in 0..<2 * rounds {
                request.includesPendingChanges = round % 2 == 0
                var found = 0
                let time = try Workloads.time { found = try context.fetch(request).count }
                if request.includesPendingChanges { including.append(time) } else { storeOnly.append(time) }
                guard found == (request.includesPendingChanges ? seen : stored) else {
                    throw AmberError.notAStore(path: "pending fetch", reason: "found \(found) items, expected \(request.includesPendingChanges ? seen : stored)")
                }
            }
        }
        return Result(amber: median(including), raw: median(storeOnly))
    }
}
