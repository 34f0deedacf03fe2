import Amber
import AmberBenchRaw
import Foundation

/// W14, what a save costs at each durability: many small saves (one new
/// object each) with ``Store/Durability/normal`` and with
/// ``Store/Durability/full``, against raw SQLite committing the same rows
/// one transaction each with the same `synchronous` setting. The full row's
/// times against the normal row's are the price of surviving power loss.
struct DurabilityWorkload {
    static func name(_ durability: Store.Durability) -> String {
        "W14 200 saves, \(durability == .full ? "full" : "normal") durability"
    }
    static let saves = 200
    let workspace: URL

    /// Medians for `durability`, the two sides alternating.
    func run(_ durability: Store.Durability, repetitions: Int) throws -> Result {
        let (model, item, name, number) = try MergeWorkload.items()
        var options = Store.Options()
        options.durability = durability
        var amber: [Double] = [], raw: [Double] = []
        for repetition in 0..<max(repetitions, 3) {
            let file = "durability-\(durability == .full ? "full" : "normal")-\(repetition)"
            let path = workspace.appendingPathComponent(file + ".amber").path
            let rawPath = workspace.appendingPathComponent(file + ".sqlite").path
            let measureAmber = {
                let context = Context(store: try Store(path: path, model: model, options: options))
                amber.append(try Workloads.time {
                    for i in 0..<Self.saves {
                        let object = try context.insert(item)
                        try object.setValue(.string("a note"), for: name)
                        try object.setValue(.int(Int64(i)), for: number)
                        try context.save()
                    }
                })
                guard try context.count(FetchRequest("Item")) == Self.saves else {
                    throw AmberError.notAStore(path: path, reason: "\(try context.count(FetchRequest("Item"))) of \(Self.saves) saves landed")
                }
            }
            let measureRaw = { raw.append(bench_raw_w14(rawPath, Int64(Self.saves), durability == .full ? 1 : 0)) }
            if repetition % 2 == 0 {
                try measureAmber()
                measureRaw()
            } else {
                measureRaw()
                try measureAmber()
            }
        }
        return Result(amber: median(amber), raw: median(raw))
    }
}
