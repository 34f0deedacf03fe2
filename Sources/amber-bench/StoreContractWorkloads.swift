import Amber
import AmberBenchRaw
import Foundation

/// W15, what the history costs a save: N new items saved, then every 10th
/// changed and saved, with the history against the same without it
/// (`Store.Options.recordsHistory` off). Target: at most 1.15.
struct HistoryWorkload {
    static let name = "W15 saves with history / without"
    let n: Int
    let workspace: URL

    func run(repetitions: Int) throws -> Result {
        let (model, item, name, number) = try MergeWorkload.items()
        var with: [Double] = [], without: [Double] = []
        for repetition in 0..<max(repetitions, 3) {
            for history in repetition % 2 == 0 ? [true, false] : [false, true] {
                var options = Store.Options()
                options.recordsHistory = history
                let path = workspace.appendingPathComponent("history-\(history)-\(repetition).amber").path
                let context = Context(store: try Store(path: path, model: model, options: options))
                let values = (0..<n).flatMap { [Value.string("item \($0)"), .int(Int64($0))] }
                let elapsed = try Workloads.time {
                    let objects = try context.insert(item, setting: [name, number], to: values)
                    try context.save()
                    for object in stride(from: 0, to: objects.count, by: 10).map({ objects[$0] }) { try object.setValue(.string("changed"), for: name) }
                    try context.save()
                }
                if history { with.append(elapsed) } else { without.append(elapsed) }
            }
        }
        return Result(amber: median(with), raw: median(without))
    }
}

/// W16, a batch update of every one of N rows (`number = number + 1` where
/// `number >= 0`) against raw SQLite's same UPDATE on the same layout (target
/// 1.3), and against fetching, setting and saving them through a context
/// (informational: how much the batch saves).
struct BatchUpdateWorkload {
    static let name = "W16 batch update every row"
    static let againstContextName = "W16 batch update / fetch + set + save"
    let n: Int
    let workspace: URL

    func run(repetitions: Int) throws -> (raw: Result, context: Result) {
        let (model, item, name, number) = try MergeWorkload.items()
        var batch: [Double] = [], raw: [Double] = [], loaded: [Double] = []
        let request = try FetchRequest("Item", where: "number >= 0")
        for repetition in 0..<max(repetitions, 3) {
            func filled(_ file: String) throws -> Context {
                let context = Context(store: try Store(path: workspace.appendingPathComponent(file).path, model: model))
                try context.insert(item, setting: [name, number], to: (0..<n).flatMap { [Value.string("an item"), .int(Int64($0))] })
                try context.save()
                return Context(store: context.store)
            }
            let rawPath = workspace.appendingPathComponent("batch-raw-\(repetition).sqlite").path
            if repetition % 2 == 1 { raw.append(bench_raw_w16(rawPath, Int64(n))) }
            let context = try filled("batch-\(repetition).amber")
            var changed = 0
            batch.append(try Workloads.time { changed = try context.batchUpdate(request, set: ["number": .attribute("number") + 1]).objectIDs.count })
            guard changed == n else { throw AmberError.notAStore(path: "batch", reason: "the batch changed \(changed) of \(n) rows") }
            if repetition % 2 == 0 { raw.append(bench_raw_w16(rawPath, Int64(n))) }
            let reader = try filled("batch-loaded-\(repetition).amber")
            loaded.append(try Workloads.time {
                for object in try reader.fetch(request) {
                    guard case .int(let value) = try object.value(for: number) else { continue }
                    try object.setValue(.int(value + 1), for: number)
                }
                try reader.save()
            })
        }
        return (Result(amber: median(batch), raw: median(raw)), Result(amber: median(batch), raw: median(loaded)))
    }
}

/// W17, merging across processes: a context holding N objects merges 1,000
/// changes another process saved (a child process of this program), read
/// from the store's history. Its ratio is to the child's save, as W9's is to
/// its writer's: the merge must cost what changed, not what is held.
struct CrossProcessMergeWorkload {
    static let name = "W17 merge 1,000 changes from another process"
    let n: Int
    let workspace: URL

    func run(repetitions: Int) throws -> Result {
        let (model, item, name, number) = try MergeWorkload.items()
        let changed = min(1_000, max(1, n / 10))
        var merges: [Double] = [], saves: [Double] = []
        for repetition in 0..<repetitions {
            let path = workspace.appendingPathComponent("process-merge\(repetition).amber").path
            let store = try Store(path: path, model: model)
            let writer = Context(store: store)
            try writer.insert(item, setting: [name, number], to: (0..<n).flatMap { [Value.string("item \($0)"), .int(Int64($0))] })
            try writer.save()
            let reader = Context(store: store)
            let held = try reader.fetch(FetchRequest("Item"))
            let program = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
            let output = try Workloads.runChild(program, ["--merge-writer", path, "--n", "\(changed)"])
            guard let saved = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw AmberError.notAStore(path: path, reason: "the writing process printed \(output)")
            }
            saves.append(saved)
            merges.append(try Workloads.time { try reader.mergeSavedChanges() })
            let merged = try held.count { try $0.value(for: name) == .string("changed") }
            guard merged == changed else { throw AmberError.notAStore(path: path, reason: "merged \(merged) of \(changed) changes") }
        }
        return Result(amber: median(merges), raw: median(saves))
    }

    /// The child's side: changes the first `count` items of the store at `path`, saves, and prints the save's milliseconds.
    static func write(path: String, count: Int) throws {
        let (model, _, name, _) = try MergeWorkload.items()
        let context = Context(store: try Store(path: path, model: model))
        for object in try context.fetch("Item", where: "number < %@", .int(Int64(count))) { try object.setValue(.string("changed"), for: name) }
        Swift.print(try Workloads.time { try context.save() })
    }
}
