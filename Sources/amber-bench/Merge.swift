import Amber
import Foundation

/// W9, merging: one context saves changes to 1,000 of the N objects another
/// context holds, and the other merges them. Its ratio is to that save, not to
/// raw SQLite: merging must cost what changed, not what the reader holds.
struct MergeWorkload {
    static let name = "W9 merge 1,000 saved changes"
    let n: Int
    let workspace: URL

    /// Medians of the merge (as Amber's time) and of the save it merges (as the reference).
    func run(repetitions: Int) throws -> Result {
        let (model, item, name, number) = try Self.items()
        let changed = min(1_000, max(1, n / 10))
        var merges: [Double] = [], saves: [Double] = []
        for repetition in 0..<repetitions {
            let store = try Store(path: workspace.appendingPathComponent("merge\(repetition).amber").path, model: model)
            let writer = Context(store: store)
            try writer.insert(item, setting: [name, number], to: (0..<n).flatMap { [Value.string("item \($0)"), .int(Int64($0))] })
            try writer.save()
            let reader = Context(store: store)
            let held = try reader.fetch(FetchRequest("Item"))
            for object in try writer.fetch("Item", where: "number < %@", .int(Int64(changed))) { try object.setValue(.string("changed"), for: name) }
            saves.append(try Workloads.time { try writer.save() })
            merges.append(try Workloads.time { try reader.mergeSavedChanges() })
            let merged = try held.count { try $0.value(for: name) == .string("changed") }
            guard merged == changed else { throw AmberError.notAStore(path: "merge", reason: "merged \(merged) of \(changed) changes") }
        }
        return Result(amber: median(merges), raw: median(saves))
    }

    /// The model W9 and W10 use: items with a name and a number, and their handles.
    static func items() throws -> (Model, Entity, Attribute, Attribute) {
        let model = try Model(ModelDescription {
            EntityDescription("Item") {
                Attribute.string("name")
                Attribute.integer64("number")
            }
        })
        let item = try model.entity(named: "Item")
        return (model, item, try item.attribute(named: "name"), try item.attribute(named: "number"))
    }
}
