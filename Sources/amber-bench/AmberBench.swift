import Amber
import AmberBenchRaw
import ArgumentParser
import Foundation

/// Amber against raw SQLite (C, prepared statements, the same plugin functions) in one run.
@main
struct AmberBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amber-bench",
        abstract: "Amber's benchmark: each workload for Amber and for raw SQLite C, interleaved, reported as ratios.")

    @Option(help: "Objects per workload.") var n = 100_000
    @Option(help: "Repetitions; the median is reported.") var repetitions = 5
    @Option(help: "Colour round trips for W5.") var roundTrips = 10_000_000
    @Flag(help: "N=2000, one repetition, 100,000 round trips: a smoke run that keeps the benchmark from rotting.") var quick = false
    @Option(help: "The color plugin (default: libAmberColorPlugin.so beside this program).") var plugin: String?
    @Option(help: "The C API benchmark program to run too (its JSON is merged).") var capi: String?
    @Option(help: "The Python benchmark script to run too (its JSON is merged).") var python: String?
    @Option(help: "GRDB's side of W1-W4 (Benchmarks/GRDB's grdb-bench) to run too, reported against this run's raw SQLite and Amber.")
    var grdb: String?
    @Option(help: "Write {workload: {amber_ms, raw_ms, ratio}} to this file.") var json: String?
    @Option(help: "A PostgreSQL server (libpq URI) for the PostgreSQL rows, against raw libpq on it; none: no such rows.") var postgres: String?
    @Option(help: "Where the Core Data store fixtures are (W18; none there: no W18 row).") var coredata = "../shared/coredata"
    @Option(help: .hidden) var memoryChild: String?
    @Option(help: .hidden) var profile: String?
    @Option(help: .hidden) var mergeWriter: String?

    mutating func run() throws {
        if quick { (n, repetitions, roundTrips) = (2000, 1, 100_000) }
        if let path = mergeWriter {
            // W17's other process.
            try CrossProcessMergeWorkload.write(path: path, count: n)
            return
        }
        let pluginPath = plugin ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("libAmberColorPlugin.so").path
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("amber-bench-\(getpid())")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workspace) }
        let bench = try Workloads(pluginPath: pluginPath, n: n, workspace: workspace)

        if profile == "durability" {
            // W14 alone, both sides, for A/B runs: `--profile durability`.
            for durability in [Store.Durability.normal, .full] {
                let result = try DurabilityWorkload(workspace: workspace).run(durability, repetitions: repetitions)
                Swift.print(DurabilityWorkload.name(durability), result.amber_ms, result.raw_ms, result.ratio)
            }
            return
        }
        if profile == "postgresql", let postgres {
            // The PostgreSQL rows alone, both sides: `--profile postgresql --postgres URL`.
            let workloads = PostgreSQLWorkloads(bench: bench, url: postgres)
            Swift.print(workloads.settings())
            for (name, result) in try workloads.run(repetitions: repetitions).sorted(by: { $0.key < $1.key }) {
                Swift.print(name, result.amber_ms, result.raw_ms, result.ratio)
            }
            return
        }
        if profile == "contract" {
            // W15-W17 alone, for A/B runs: `--profile contract`.
            let batch = try BatchUpdateWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
            for (name, result) in [(HistoryWorkload.name, try HistoryWorkload(n: n, workspace: workspace).run(repetitions: repetitions)),
                                   (BatchUpdateWorkload.name, batch.raw), (BatchUpdateWorkload.againstContextName, batch.context),
                                   (CrossProcessMergeWorkload.name, try CrossProcessMergeWorkload(n: n, workspace: workspace).run(repetitions: repetitions))] {
                Swift.print(name, result.amber_ms, result.raw_ms, result.ratio)
            }
            return
        }
        if let mode = memoryChild {
            try bench.memoryRun(mode)
            return
        }
        if profile == "graph" {
            // W6-W8 on Amber's side only, for perf: `--profile graph`.
            let graph = try GraphWorkloads(n: n, workspace: workspace)
            for repetition in 0..<repetitions { Swift.print(try graph.amberRun(repetition)) }
            return
        }
        if profile == "graph-ratios" {
            // W6-W8 alone, both sides, for A/B runs: `--profile graph-ratios`.
            for (name, result) in try GraphWorkloads(n: n, workspace: workspace).run(repetitions: repetitions).sorted(by: { $0.key < $1.key }) {
                Swift.print(name, result.amber_ms, result.raw_ms, result.ratio)
            }
            return
        }
        if profile == "coredata" {
            // W18 alone, both sides: `--profile coredata`.
            guard let result = try CoreDataWorkload(fixtures: URL(fileURLWithPath: coredata), workspace: workspace).run(repetitions: repetitions)
            else { throw ValidationError("no SampleModel2_V1.sqlite under \(coredata)") }
            let imported = try CoreDataImportWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
            Swift.print(CoreDataWorkload.name, result.amber_ms, result.raw_ms, result.ratio)
            Swift.print(CoreDataImportWorkload.name, imported.amber_ms, imported.raw_ms, imported.ratio)
            return
        }
        if profile == "links" {
            // W20 alone: `--profile links`.
            for (name, result) in try LinkWorkload(n: n, workspace: workspace).run(repetitions: repetitions).sorted(by: { $0.key < $1.key }) {
                Swift.print(name, result.amber_ms, result.raw_ms, result.ratio)
            }
            return
        }
        if profile == "migration" {
            // W13 alone, both sides: `--profile migration`.
            let result = try MigrationWorkload(bench: bench).run(repetitions: repetitions)
            Swift.print(result.amber_ms, result.raw_ms, result.ratio)
            return
        }
        if profile == "live" || profile == "derived" || profile == "extended" {
            // W10 alone (with 50 times its saves), W11 or W12 alone, both sides, for perf: `--profile live`.
            let result = switch profile {
            case "live": try LiveQueryWorkload(n: n, workspace: workspace, rounds: 2000).run(repetitions: repetitions)
            case "derived": try DerivedWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
            default: try ExtendedWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
            }
            Swift.print(result.amber_ms, result.raw_ms, result.ratio)
            return
        }
        if profile == "pending" {
            // W21 alone, both sides, for A/B runs and perf: `--profile pending`.
            let result = try PendingFetchWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
            Swift.print(result.amber_ms, result.raw_ms, result.ratio)
            return
        }
        if profile == "store-ratios" {
            // W1-W4 alone, both sides, for A/B runs: `--profile store-ratios`.
            for (name, result) in try bench.storeWorkloads(repetitions: repetitions).sorted(by: { $0.key < $1.key }) {
                Swift.print(name, String(format: "%.1f %.1f %.2f", result.amber_ms, result.raw_ms, result.ratio))
            }
            return
        }
        if profile == "typed" {
            // W22 alone, for A/B runs: `--profile typed`.
            for (name, result) in try TypedWorkload(bench: bench).run(repetitions: repetitions).sorted(by: { $0.key < $1.key }) {
                Swift.print(name, String(format: "%.1f %.1f %.2f", result.amber_ms, result.raw_ms, result.ratio))
            }
            return
        }
        if profile == "read" {
            // W2 alone on Amber's side, `--repetitions` times over one store, for perf: `--profile read`.
            let side = try AmberSide(bench, 0)
            _ = try side.run(0)
            side.profiling = true
            for _ in 0..<repetitions { _ = try side.run(1) }
            return
        }
        if profile == "typed-read" {
            // W2 through the generated class, `--repetitions` times over one store: `read`'s twin, for perf.
            try TypedWorkload(bench: bench).profileReads(repetitions: repetitions)
            return
        }
        if profile != nil {
            // One side only, for perf or callgrind: `--profile amber`.
            for repetition in 0..<repetitions { Swift.print(try bench.amberRun(repetition, profiling: true)) }
            return
        }
        var results = try bench.storeWorkloads(repetitions: repetitions)
        results[Workloads.valueRoundTripsName] = try bench.valueRoundTrips(roundTrips / 10, repetitions: repetitions)
        if let grdb {
            let output = try Workloads.runChild(grdb, ["--n", "\(n)", "--repetitions", "\(repetitions)", "--round-trips", "\(roundTrips / 10)",
                                                       "--workspace", workspace.path])
            for (name, grdbMs) in try JSONDecoder().decode([String: Double].self, from: Data(output.utf8)) {
                guard let ours = results[name] else { continue }
                results["GRDB " + name] = Result(amber: grdbMs, raw: ours.raw_ms)
                results["Amber/GRDB " + name] = Result(amber: ours.amber_ms, raw: grdbMs)
            }
        }
        results["W5 colour round trips"] = try bench.roundTrips(roundTrips, repetitions: repetitions)
        results["W5 plugin against Swift transformer"] = try bench.pluginAgainstSwift(roundTrips, repetitions: repetitions)
        for (name, result) in try GraphWorkloads(n: n, workspace: workspace).run(repetitions: repetitions) { results[name] = result }
        for (name, result) in try TypedWorkload(bench: bench).run(repetitions: repetitions) { results[name] = result }
        results[MergeWorkload.name] = try MergeWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        results[LiveQueryWorkload.name] = try LiveQueryWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        results[PendingFetchWorkload.name] = try PendingFetchWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        results[DerivedWorkload.name] = try DerivedWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        results[ExtendedWorkload.name] = try ExtendedWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        results[MigrationWorkload.name] = try MigrationWorkload(bench: bench).run(repetitions: repetitions)
        results[HistoryWorkload.name] = try HistoryWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        let batch = try BatchUpdateWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        (results[BatchUpdateWorkload.name], results[BatchUpdateWorkload.againstContextName]) = (batch.raw, batch.context)
        results[CrossProcessMergeWorkload.name] = try CrossProcessMergeWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        results[CoreDataWorkload.name] = try CoreDataWorkload(fixtures: URL(fileURLWithPath: coredata), workspace: workspace)
            .run(repetitions: repetitions)
        results[CoreDataImportWorkload.name] = try CoreDataImportWorkload(n: n, workspace: workspace).run(repetitions: repetitions)
        for (name, result) in try LinkWorkload(n: max(n / 10, 500), workspace: workspace).run(repetitions: repetitions) { results[name] = result }
        for durability in [Store.Durability.normal, .full] {
            results[DurabilityWorkload.name(durability)] = try DurabilityWorkload(workspace: workspace).run(durability, repetitions: repetitions)
        }
        var server: String?
        if let postgres {
            let workloads = PostgreSQLWorkloads(bench: bench, url: postgres)
            server = workloads.settings()
            for (name, result) in try workloads.run(repetitions: repetitions) { results[name] = result }
        }
        let memory = try bench.peakMemory(pluginPath: pluginPath, n: n)
        results["peak memory W1+W2 (MiB)"] = memory
        if let grdb {
            let output = try Workloads.runChild(grdb, ["--memory", "--n", "\(n)", "--workspace", workspace.path])
            let grdbMiB = (Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) / 1024
            results["GRDB peak memory W1+W2 (MiB)"] = Result(amber: grdbMiB, raw: memory.raw_ms)
            results["Amber/GRDB peak memory W1+W2 (MiB)"] = Result(amber: memory.amber_ms, raw: grdbMiB)
        }
        let pythonArguments = [python ?? ""] + (postgres.map { ["--postgres", $0] } ?? [])
        for (program, arguments) in [(capi, ["--round-trips", "\(roundTrips)"]), (python.map { _ in "python3" }, pythonArguments)] {
            guard let program else { continue }
            let output = try Workloads.runChild(program, arguments + ["--n", "\(n)", "--repetitions", "\(repetitions)",
                                                                        "--plugin", pluginPath])
            for (name, result) in try JSONDecoder().decode([String: Result].self, from: Data(output.utf8)) { results[name] = result }
        }
        Report(results: results, n: n, repetitions: repetitions, roundTrips: roundTrips, server: server).print()
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(results).write(to: URL(fileURLWithPath: json))
        }
    }
}

/// One workload's medians.
struct Result: Codable {
    var amber_ms: Double
    var raw_ms: Double
    var ratio: Double { raw_ms > 0 ? amber_ms / raw_ms : 0 }

    enum CodingKeys: String, CodingKey { case amber_ms, raw_ms, ratio }

    init(amber: Double, raw: Double) {
        amber_ms = amber
        raw_ms = raw
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        amber_ms = try container.decode(Double.self, forKey: .amber_ms)
        raw_ms = try container.decode(Double.self, forKey: .raw_ms)
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(amber_ms, forKey: .amber_ms)
        try container.encode(raw_ms, forKey: .raw_ms)
        try container.encode((ratio * 1000).rounded() / 1000, forKey: .ratio)
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

/// Two ways of finding the same objects, timed alternately (at least three
/// times each): the medians, `measured` as Amber's time and `reference` as
/// the raw one. Each returns how many it found; they must agree, and not on none.
func compare(_ what: String, repetitions: Int, _ measured: () throws -> Int, against reference: () throws -> Int) throws -> Result {
    var times: ([Double], [Double]) = ([], [])
    var counts = (0, 0)
    for _ in 0..<max(repetitions, 3) {
        times.0.append(try Workloads.time { counts.0 = try measured() })
        times.1.append(try Workloads.time { counts.1 = try reference() })
    }
    guard counts.0 == counts.1, counts.0 > 0 else {
        throw AmberError.notAStore(path: what, reason: "found \(counts.0) books, the reference \(counts.1)")
    }
    return Result(amber: median(times.0), raw: median(times.1))
}

/// The workloads, for Amber's Swift API and for raw SQLite.
struct Workloads {
    let n: Int
    let workspace: URL
    let plugin: OpaquePointer
    let registry = Registry()
    let model: Model
    let entity: Entity
    let title, price, published, color: Attribute

    init(pluginPath: String, n: Int, workspace: URL) throws {
        self.n = n
        self.workspace = workspace
        guard let plugin = bench_plugin_open(pluginPath) else { throw ValidationError("cannot open the color plugin at \(pluginPath)") }
        self.plugin = plugin
        try registry.loadPlugin(at: pluginPath)
        model = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.double("price")
                Attribute.date("published")
                Attribute.transformable("color", valueClass: "Color", transformers: ["ColorToData"])
            }
        }, registry: registry)
        entity = try model.entity(named: "Book")
        (title, price, published, color) = (try entity.attribute(named: "title"), try entity.attribute(named: "price"),
                                             try entity.attribute(named: "published"), try entity.attribute(named: "color"))
    }

    static func colorValue(_ i: Int) -> Value { .custom(colorCustom(i)) }

    static func colorCustom(_ i: Int) -> CustomValue {
        withUnsafeBytes(of: bench_color_for(Int64(i))) { CustomValue(className: "Color", copying: $0) }
    }

    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = bench_now_ms()
        try body()
        return bench_now_ms() - start
    }

    /// W1-W4 for both sides in lockstep: each workload runs on one side and
    /// then at once on the other (the order alternates per repetition), so a
    /// burst of load on this shared machine hits both. Medians.
    func storeWorkloads(repetitions: Int) throws -> [String: Result] {
        var amber = [[Double]](repeating: [], count: 4), raw = [[Double]](repeating: [], count: 4)
        for repetition in 0..<repetitions {
            let rawSide = try RawSide(self, repetition), amberSide = try AmberSide(self, repetition)
            for step in 0..<4 {
                if repetition % 2 == 0 {
                    raw[step].append(try rawSide.run(step))
                    amber[step].append(try amberSide.run(step))
                } else {
                    amber[step].append(try amberSide.run(step))
                    raw[step].append(try rawSide.run(step))
                }
            }
        }
        let names = ["W1 insert + save", "W2 fetch all + read", "W3 CONTAINS[c] + sum", "W4 update every 10th + save"]
        return Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, Result(amber: median(amber[$0]), raw: median(raw[$0]))) })
    }

    /// All four workloads on one side, in order (for profiling and the memory child).
    func amberRun(_ repetition: Int, profiling: Bool = false) throws -> [Double] {
        let side = try AmberSide(self, repetition)
        side.profiling = profiling
        return try (0..<4).map { try side.run($0) }
    }

    /// W5: the colour through the host (checked calls of the plugin) against direct pointer calls.
    func roundTrips(_ count: Int, repetitions: Int) throws -> Result {
        try againstDirectCalls(count, repetitions: repetitions) { try Self.colourRoundTrips(count, through: $0) }
    }

    static let valueRoundTripsName = "W5 round trips through values"

    /// W5 through the value API a user calls (`forward` to a stored value, `reverse` back), against direct pointer calls.
    func valueRoundTrips(_ count: Int, repetitions: Int) throws -> Result {
        try againstDirectCalls(count, repetitions: repetitions) { transformer in
            var sum = 0.0
            let elapsed = try Self.time {
                for i in 0..<count {
                    var color = bench_color(r: Float(i & 255), g: 0.5, b: 0.25, a: 1)
                    let value = Value.custom(withUnsafeBytes(of: &color) { CustomValue(className: "Color", copying: $0) })
                    guard case .custom(let back) = try transformer.reverse(try transformer.forward(value)) else {
                        throw ValidationError("a colour did not come back")
                    }
                    sum += Double(back.withUnsafeBytes { $0.loadUnaligned(as: Float.self) })
                }
            }
            try Self.checkColours(sum, count, through: transformer)
            return elapsed
        }
    }

    /// `count` round trips timed by `amberSide` through the colour transformer, against as many direct pointer calls; medians.
    private func againstDirectCalls(_ count: Int, repetitions: Int, _ amberSide: (CheckedTransformer) throws -> Double) throws -> Result {
        let transformer = try registry.transformer(named: "ColorToData")
        var amber: [Double] = [], raw: [Double] = []
        for _ in 0..<repetitions {
            var checksum = 0.0
            raw.append(bench_raw_w5(plugin, Int64(count), &checksum))
            amber.append(try amberSide(transformer))
        }
        return Result(amber: median(amber), raw: median(raw))
    }

    /// Both sides: a colour on the stack, through the checked byte path into a stack buffer and back. Returns ms.
    static func colourRoundTrips(_ count: Int, through transformer: CheckedTransformer) throws -> Double {
        var checksum = 0.0
        let elapsed = try time {
            for i in 0..<count {
                checksum += Double(try colourRoundTrip(bench_color(r: Float(i & 255), g: 0.5, b: 0.25, a: 1), through: transformer).r)
            }
        }
        try checkColours(checksum, count, through: transformer)
        return elapsed
    }

    /// One colour through the checked byte path and back.
    @inline(__always)
    private static func colourRoundTrip(_ colour: bench_color, through transformer: CheckedTransformer) throws -> bench_color {
        var color = colour, stored = (UInt64(0), UInt64(0)), result = bench_color()
        let written = try withUnsafeBytes(of: &color) { input in
            try withUnsafeMutableBytes(of: &stored) { try transformer.forward(bytes: input, into: $0) }
        }
        _ = try withUnsafeBytes(of: &stored) { input in
            try withUnsafeMutableBytes(of: &result) {
                try transformer.reverse(bytes: UnsafeRawBufferPointer(rebasing: input[..<written]), into: $0)
            }
        }
        return result
    }

    /// Every colour must come back exactly: the sum of the red channels
    /// (small integers, so the sum is exact) is checked after the timed loop,
    /// and a wrong sum is traced, untimed, to the first colour that changed.
    static func checkColours(_ sum: Double, _ count: Int, through transformer: CheckedTransformer) throws {
        let expected = (0..<count).reduce(0.0) { $0 + Double($1 & 255) }
        guard sum != expected else { return }
        for i in 0..<count {
            let colour = bench_color(r: Float(i & 255), g: 0.5, b: 0.25, a: 1)
            let back = try colourRoundTrip(colour, through: transformer)
            if (back.r, back.g, back.b, back.a) != (colour.r, colour.g, colour.b, colour.a) {
                throw ValidationError("round trip \(i) through \(transformer.name) gave (\(back.r), \(back.g), \(back.b), \(back.a)) "
                    + "for (\(colour.r), 0.5, 0.25, 1)")
            }
        }
        throw ValidationError("the red channels summed to \(sum), not \(expected), but every colour came back when traced")
    }

    /// W5 through the plugin against the same transformer written in Swift,
    /// both through Amber's checked byte path: the plugin boundary's own cost.
    func pluginAgainstSwift(_ count: Int, repetitions: Int) throws -> Result {
        let swiftRegistry = Registry()
        try swiftRegistry.declare(.structure(name: "Color", fields: ["r", "g", "b", "a"].map { FieldDescription($0, .float) }))
        try swiftRegistry.register(Transformer(
            name: "ColorToData", from: "Color", to: "Binary",
            forward: { value in value }, reverse: { value in value },
            forwardBytes: { input, output in
                // The plugin's stored form: four little-endian IEEE 754 floats.
                for i in 0..<4 { output.storeBytes(of: input.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self).littleEndian,
                                                   toByteOffset: 4 * i, as: UInt32.self) }
                return 16
            },
            reverseBytes: { input, output in
                guard input.count == 16 else { throw ValidationError("a stored colour has 16 bytes") }
                for i in 0..<4 { output.storeBytes(of: UInt32(littleEndian: input.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)),
                                                   toByteOffset: 4 * i, as: UInt32.self) }
                return 16
            }))
        let swift = try swiftRegistry.transformer(named: "ColorToData"), plugin = try registry.transformer(named: "ColorToData")
        var throughPlugin: [Double] = [], throughSwift: [Double] = []
        for _ in 0..<repetitions {
            throughSwift.append(try Self.colourRoundTrips(count, through: swift))
            throughPlugin.append(try Self.colourRoundTrips(count, through: plugin))
        }
        return Result(amber: median(throughPlugin), raw: median(throughSwift))
    }

    /// W1 + W2 once in this process, then prints the peak RSS in KiB (run as a child).
    func memoryRun(_ mode: String) throws {
        if mode == "raw" {
            let side = try RawSide(self, 0)
            _ = try side.run(0)
            _ = try side.run(1)
        } else {
            let side = try AmberSide(self, 0)
            _ = try side.run(0)
            _ = try side.run(1)
        }
        Swift.print(bench_peak_rss_kib())
    }

    /// Peak memory of a W1+W2 process on each side, in MiB.
    func peakMemory(pluginPath: String, n: Int) throws -> Result {
        let me = CommandLine.arguments[0]
        func peak(_ mode: String) throws -> Double {
            let output = try Self.runChild(me, ["--memory-child", mode, "--n", "\(n)", "--plugin", pluginPath])
            return (Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) / 1024
        }
        return Result(amber: try peak("amber"), raw: try peak("raw"))
    }

    static func runChild(_ program: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program.hasPrefix("/") ? program : "/usr/bin/env")
        process.arguments = program.hasPrefix("/") ? arguments : [program] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("\(program) failed with status \(process.terminationStatus)") }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The table, with each target.
struct Report {
    let results: [String: Result]
    let n, repetitions, roundTrips: Int
    /// The PostgreSQL server's version and settings, when the PostgreSQL rows ran.
    var server: String?

    /// Every row in print order with its target: the Swift API's own; the C
    /// API's are 1.2 times the Swift API's (the issue's "within 1.2x");
    /// Python's are against Python's sqlite3 (W5: a plain Python function),
    /// the Python PostgreSQL rows against SQLAlchemy 2 with psycopg 3.
    static let targets: [(String, Double)] = [
        ("W1 insert + save", 1.3), ("W2 fetch all + read", 1.5), ("W3 CONTAINS[c] + sum", 1.2), ("W4 update every 10th + save", 1.5),
        ("W5 colour round trips", 2.0), ("W5 plugin against Swift transformer", 1.0),
        // The value API against direct calls has no target of its own: GRDB's conversion is the bar (below).
        (Workloads.valueRoundTripsName, 0), ("peak memory W1+W2 (MiB)", 2.0),
        ("W6 authors and books insert + save", 1.5), ("W7 fetch authors, prefetch books, sum prices", 2.0),
        ("W8 ANY books.price > 50", 1.3),
        // Typed classes against handles: the issue's "within 5%".
        (TypedWorkload.names[0], 1.05), (TypedWorkload.names[1], 1.05), (TypedWorkload.names[2], 1.05),
        (MergeWorkload.name, 0.5), (LiveQueryWorkload.name, 1.5), (PendingFetchWorkload.name, 1.5),
        (DerivedWorkload.name, 0.33),
        (ExtendedWorkload.name, 2.0), (MigrationWorkload.name, 3.0),
        (DurabilityWorkload.name(.normal), 1.5), (DurabilityWorkload.name(.full), 1.5),
        (HistoryWorkload.name, 1.15), (BatchUpdateWorkload.name, 1.3), (BatchUpdateWorkload.againstContextName, 0.5),
        (CrossProcessMergeWorkload.name, 0.5), (CoreDataWorkload.name, 2.0), (CoreDataImportWorkload.name, 3.0),
        (LinkWorkload.names[0], 1.5), (LinkWorkload.names[1], 1.5), (LinkWorkload.names[2], 1.5),
        (PostgreSQLWorkloads.names[0], 1.5), (PostgreSQLWorkloads.names[1], 2.0), (PostgreSQLWorkloads.names[2], 2.0),
        (PostgreSQLWorkloads.names[3], 1.5),
        // GRDB's rows compare it with raw SQLite (no target: GRDB's, not Amber's); then Amber with GRDB.
        ("GRDB W1 insert + save", 0), ("GRDB W2 fetch all + read", 0), ("GRDB W3 CONTAINS[c] + sum", 0),
        ("GRDB W4 update every 10th + save", 0), ("GRDB " + Workloads.valueRoundTripsName, 0),
        ("GRDB peak memory W1+W2 (MiB)", 0),
        ("Amber/GRDB W1 insert + save", 1.0), ("Amber/GRDB W2 fetch all + read", 1.0),
        ("Amber/GRDB W3 CONTAINS[c] + sum", 1.0), ("Amber/GRDB W4 update every 10th + save", 1.0),
        ("Amber/GRDB " + Workloads.valueRoundTripsName, 1.0), ("Amber/GRDB peak memory W1+W2 (MiB)", 1.0),
        ("C API W1 insert + save", 1.56), ("C API W2 fetch all + read", 1.8), ("C API W2 batch fetch + read", 1.8),
        ("C API W3 CONTAINS[c] + sum", 1.44), ("C API W4 update every 10th + save", 1.8), ("C API W5 colour round trips", 2.4),
        ("Python W1 insert + save", 1.0), ("Python W2 fetch all + read", 1.0), ("Python W3 CONTAINS[c] + sum", 1.0),
        ("Python W4 update every 10th + save", 1.0), ("Python W5 colour round trips", 2.0),
        ("Python W22 typed W1 insert + save", 1.1), ("Python W22 typed W2 fetch all + read", 1.1),
        ("Python W22 typed W4 update every 10th + save", 1.1),
        ("Python PostgreSQL W1 insert + save", 1.0), ("Python PostgreSQL W2 fetch all + read", 1.0),
        ("Python PostgreSQL W3 CONTAINS[c] + sum", 1.0), ("Python PostgreSQL W4 update every 10th + save", 1.0),
    ]

    func print() {
        Swift.print("Amber vs raw SQLite C, N = \(n), median of \(repetitions), W5 = \(roundTrips) round trips")
        Swift.print("workload".padding(toLength: 40, withPad: " ", startingAt: 0) + "     amber       raw   ratio  target")
        for (name, target) in Self.targets {
            guard let result = results[name] else { continue }
            let line = name.padding(toLength: 40, withPad: " ", startingAt: 0)
                + String(format: "%10.1f%10.1f%8.2f", result.amber_ms, result.raw_ms, result.ratio)
            guard target > 0 else {
                Swift.print(line + "       -")
                continue
            }
            Swift.print(line + String(format: "%8.1f  %@", target, result.ratio <= target ? "met" : "MISSED"))
        }
        Swift.print("(times in ms; memory in MiB; Python rows compare with Python's sqlite3 module; W9's with the save it merges; W10's with the save without the live query; W11's with the folding search; W12's with the modelled column; W13's with raw SQLite writing the same objects fresh; W14's with raw SQLite committing each row at the same synchronous setting; W15's with the same saves without history; W16's with raw SQLite's UPDATE, then with loading and saving through a context; W17's with the other process's save; W18's with a plain SQLite loop over the same pages; W19's with raw SQLite copying the same rows; W20's with four times the same work at a quarter of N; W21's with the same fetch asking the store alone; W22's with the same work through handles (from Python: by entity name); GRDB's with raw SQLite, then Amber's with GRDB's; PostgreSQL rows with raw libpq on the same server: COPY, one query, pipelined updates; Python PostgreSQL rows with SQLAlchemy 2's ORM over psycopg 3 on it)")
        if let server { Swift.print("(PostgreSQL rows: \(server))") }
    }
}

/// Raw SQLite's side of W1-W4, one step at a time.
final class RawSide {
    let bench: Workloads
    let db: OpaquePointer

    init(_ bench: Workloads, _ repetition: Int) throws {
        self.bench = bench
        guard let db = bench_raw_create(bench.workspace.appendingPathComponent("raw\(repetition).db").path, bench.plugin) else {
            throw ValidationError("cannot create the raw database")
        }
        self.db = db
    }

    deinit { bench_raw_close(db) }

    func run(_ step: Int) throws -> Double {
        var checksum = 0.0
        switch step {
        case 0: return bench_raw_w1(db, Int64(bench.n))
        case 1: return bench_raw_w2(db, &checksum)
        case 2: return bench_raw_w3(db, &checksum)
        default: return bench_raw_w4(db, Int64(bench.n))
        }
    }
}

/// Amber's side of W1-W4, one step at a time. Objects stay referenced, as an
/// application's would, until after each timer: tear-down is never timed, as
/// on the raw side.
final class AmberSide {
    let bench: Workloads
    let store: Store
    var profiling = false
    private var reader: Context?
    private var books: [ManagedObject] = []

    convenience init(_ bench: Workloads, _ repetition: Int) throws {
        self.init(bench, store: try Store(path: bench.workspace.appendingPathComponent("amber\(repetition).amber").path, model: bench.model))
    }

    /// The same workloads on `store` (a PostgreSQL store, say).
    init(_ bench: Workloads, store: Store) {
        self.bench = bench
        self.store = store
    }

    func run(_ step: Int) throws -> Double {
        let (entity, title, price, published, color) = (bench.entity, bench.title, bench.price, bench.published, bench.color)
        switch step {
        case 0:
            let writer = Context(store: store)
            var inserted: [ManagedObject] = []
            inserted.reserveCapacity(bench.n)
            let insert = try Workloads.time {
                for i in 0..<bench.n {
                    let book = try writer.insert(entity)
                    inserted.append(book)
                    try book.setValue(.string("Book \(i)"), for: title)
                    try book.setValue(.double(Double(i) * 0.5), for: price)
                    try book.setValue(.date(Date(timeIntervalSince1970: 1.7e9 + Double(i))), for: published)
                    try book.setValue(Workloads.colorValue(i), for: color)
                }
            }
            let save = try Workloads.time { try writer.save() }
            if profiling { Swift.print(String(format: "W1: insert and set %.1f ms, save %.1f ms", insert, save)) }
            return insert + save
        case 1:
            // An earlier run's objects go before the timer (the profile runs W2 repeatedly).
            (books, reader) = ([], nil)
            let context = Context(store: store)
            reader = context
            var checksum = 0.0
            let fetch = try Workloads.time { books = try context.fetch(FetchRequest("Book")) }
            let read = try Workloads.time {
                for book in books {
                    if case .string(let text) = try book.value(for: title) { checksum += Double(text.utf8.count) }
                    if case .double(let value) = try book.value(for: price) { checksum += value }
                    _ = try book.value(for: published)
                    _ = try book.value(for: color)
                }
            }
            if profiling { Swift.print(String(format: "W2: fetch %.1f ms, read %.1f ms", fetch, read)) }
            return fetch + read
        case 2:
            let searcher = Context(store: store)
            var found: [ManagedObject] = []
            var sum = 0.0
            let elapsed = try Workloads.time {
                found = try searcher.fetch("Book", where: "title CONTAINS[c] %@", "42")
                for book in found {
                    if case .double(let value) = try book.value(for: price) { sum += value }
                }
            }
            found.removeAll()
            return elapsed
        default:
            return try Workloads.time {
                for index in stride(from: 0, to: books.count, by: 10) {
                    try books[index].setValue(.double(Double(index)), for: price)
                }
                try reader?.save()
            }
        }
    }
}
