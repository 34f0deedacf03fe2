import Amber
import AmberBenchRaw
import Foundation

/// W13, a migration: opening a store of N books with a model that adds an
/// attribute and moves the colour from `ColorToData` to `ColorToDataV2`
/// (every stored colour decoded through the plugin and encoded again, the
/// backup made first, as by default), against raw SQLite writing the same N
/// books fresh (W1's raw side).
struct MigrationWorkload {
    static let name = "W13 migrate: add attribute, re-encode colour"
    let bench: Workloads

    func run(repetitions: Int) throws -> Result {
        let registry = bench.registry
        if (try? registry.transformer(named: "ColorToDataV2")) == nil {
            // The colour's 16 bytes after a format byte: a new stored form, as a real format change would give.
            try registry.register(Transformer(
                name: "ColorToDataV2", from: "Color", to: "Binary", source: "amber-bench",
                forward: { value in
                    guard case .custom(let color) = value else { return .null }
                    return .binary(Data([2]) + color.bytes)
                },
                reverse: { value in
                    guard case .binary(let data) = value, data.first == 2 else { return .null }
                    return .custom(CustomValue(className: "Color", bytes: data.dropFirst()))
                }))
        }
        var description = bench.model.description
        description.entities[0].attributes.append(Attribute.string("subtitle").defaultValue(""))
        if let color = description.entities[0].attributes.firstIndex(where: { $0.name == "color" }) {
            description.entities[0].attributes[color].transformerNames = ["ColorToDataV2"]
        }
        let target = try Model(description, registry: registry)

        let original = bench.workspace.appendingPathComponent("migration-source.amber").path
        do {
            let context = Context(store: try Store(path: original, model: bench.model))
            for i in 0..<bench.n {
                let book = try context.insert(bench.entity)
                try book.setValue(.string("Book \(i)"), for: bench.title)
                try book.setValue(.double(Double(i) * 0.5), for: bench.price)
                try book.setValue(.date(Date(timeIntervalSince1970: 1.7e9 + Double(i))), for: bench.published)
                try book.setValue(Workloads.colorValue(i), for: bench.color)
            }
            try context.save()
        }  // The store closes here, so the file holds every row.
        var amber: [Double] = [], raw: [Double] = []
        for repetition in 0..<max(repetitions, 3) {
            let copy = bench.workspace.appendingPathComponent("migration\(repetition).amber").path
            try FileManager.default.copyItem(atPath: original, toPath: copy)
            var migrated: Store?
            amber.append(try Workloads.time { migrated = try Store(path: copy, model: target) })
            // Every colour must have moved: read one back through the new chain.
            let last = try Context(store: migrated ?? Store.inMemory(model: target)).fetch("Book", where: "title == %@", .string("Book \(bench.n - 1)"))
            guard let book = last.first, try book.value(forKey: "color") == Workloads.colorValue(bench.n - 1) else {
                throw AmberError.notAStore(path: copy, reason: "the migrated colour does not read back")
            }
            guard let db = bench_raw_create(bench.workspace.appendingPathComponent("migration-raw\(repetition).db").path, bench.plugin) else {
                throw AmberError.notAStore(path: "raw", reason: "cannot create the raw database")
            }
            raw.append(bench_raw_w1(db, Int64(bench.n)))
            bench_raw_close(db)
        }
        return Result(amber: median(amber), raw: median(raw))
    }
}
