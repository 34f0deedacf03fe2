import Amber
import Foundation

/// W1, W2 and W4 through the class the AmberGenerate plugin made from
/// Bench.amber.json (the benchmark's own model, as a file), against the same
/// work through handles (``AmberSide``) in the same run: what typed access costs.
struct TypedWorkload {
    static let names = ["W22 typed W1 insert + save", "W22 typed W2 fetch all + read", "W22 typed W4 update every 10th + save"]
    let bench: Workloads

    func run(repetitions: Int) throws -> [String: Result] {
        try BenchClasses.check(bench.model)
        var typed = [[Double]](repeating: [], count: 3), handles = [[Double]](repeating: [], count: 3)
        for repetition in 0..<repetitions {
            let store = { (side: String) in
                try Store(path: bench.workspace.appendingPathComponent("typed-\(side)\(repetition).amber").path, model: bench.model)
            }
            let handleSide = AmberSide(bench, store: try store("handles")), typedSide = TypedSide(bench, store: try store("typed"))
            // Each step on one side and at once on the other, the order alternating. W2 only reads, so it
            // runs five times per repetition: its difference is a few percent, below one pair's noise here.
            for (index, step) in [0, 1, 3].enumerated() {
                for pass in 0..<(step == 1 ? 5 : 1) {
                    if (repetition + pass) % 2 == 0 {
                        handles[index].append(try handleSide.run(step))
                        typed[index].append(try typedSide.run(step))
                    } else {
                        typed[index].append(try typedSide.run(step))
                        handles[index].append(try handleSide.run(step))
                    }
                }
            }
        }
        return Dictionary(uniqueKeysWithValues: Self.names.enumerated().map {
            ($1, Result(amber: median(typed[$0]), raw: median(handles[$0])))
        })
    }
}

extension TypedWorkload {
    /// Typed W2 `repetitions` times over one store (as `--profile read` runs the handle side's).
    func profileReads(repetitions: Int) throws {
        let side = TypedSide(bench, store: try Store(path: bench.workspace.appendingPathComponent("typed-read.amber").path, model: bench.model))
        _ = try side.run(0)
        for _ in 0..<repetitions { Swift.print(String(format: "typed W2: %.1f ms", try side.run(1))) }
    }
}

/// The steps of ``AmberSide`` written with the generated `Book` class.
private final class TypedSide {
    let bench: Workloads
    let store: Store
    private var reader: Context?
    private var books: [Book] = []

    init(_ bench: Workloads, store: Store) {
        self.bench = bench
        self.store = store
    }

    func run(_ step: Int) throws -> Double {
        switch step {
        case 0:
            let writer = Context(store: store)
            var inserted: [Book] = []
            inserted.reserveCapacity(bench.n)
            return try Workloads.time {
                for i in 0..<bench.n {
                    let book = try writer.insert(Book.self)
                    inserted.append(book)
                    try book.set(title: "Book \(i)")
                    try book.set(price: Double(i) * 0.5)
                    try book.set(published: Date(timeIntervalSince1970: 1.7e9 + Double(i)))
                    try book.set(color: Workloads.colorCustom(i))
                }
                try writer.save()
            }
        case 1:
            (books, reader) = ([], nil)
            let context = Context(store: store)
            reader = context
            var checksum = 0.0
            return try Workloads.time {
                books = try context.fetch(Book.self)
                for book in books {
                    checksum += Double(try book.title?.utf8.count ?? 0)
                    checksum += try book.price ?? 0
                    _ = try book.published
                    _ = try book.color
                }
            }
        default:
            return try Workloads.time {
                for index in stride(from: 0, to: books.count, by: 10) {
                    try books[index].set(price: Double(index))
                }
                try reader?.save()
            }
        }
    }
}
