import Amber
import AmberBenchRaw
import Foundation

/// W6-W8, the object graph: authors and their books, against raw SQLite C
/// doing the same inserts and joins with the same table layout.
struct GraphWorkloads {
    let authors: Int
    let books: Int
    let workspace: URL
    let model: Model
    let author, book: Entity
    let name, title, price: Attribute
    let writtenBy, written: Relationship

    init(n: Int, workspace: URL) throws {
        (books, authors) = (n, max(1, n / 10))
        self.workspace = workspace
        model = try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.double("price")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        })
        author = try model.entity(named: "Author")
        book = try model.entity(named: "Book")
        (name, title, price) = (try author.attribute(named: "name"), try book.attribute(named: "title"), try book.attribute(named: "price"))
        (writtenBy, written) = (try book.relationship(named: "author"), try author.relationship(named: "books"))
    }

    /// Medians of W6, W7 and W8 for both sides, interleaved as W1-W4 are.
    func run(repetitions: Int) throws -> [String: Result] {
        var amber = [[Double]](repeating: [], count: 3), raw = [[Double]](repeating: [], count: 3)
        for repetition in 0..<repetitions {
            let rawTimes = try rawRun(repetition), amberTimes = try amberRun(repetition)
            for step in 0..<3 {
                raw[step].append(rawTimes[step])
                amber[step].append(amberTimes[step])
            }
        }
        let names = ["W6 authors and books insert + save", "W7 fetch authors, prefetch books, sum prices", "W8 ANY books.price > 50"]
        return Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, Result(amber: median(amber[$0]), raw: median(raw[$0]))) })
    }

    private func rawRun(_ repetition: Int) throws -> [Double] {
        guard let db = bench_raw_graph_create(workspace.appendingPathComponent("graph-raw\(repetition).db").path) else {
            throw AmberError.notAStore(path: "graph-raw", reason: "cannot create")
        }
        defer { bench_raw_close(db) }
        var checksum = 0.0, found: Int64 = 0
        let w6 = bench_raw_w6(db, Int64(authors), Int64(books))
        let w7 = bench_raw_w7(db, &checksum)
        let w8 = bench_raw_w8(db, &found)
        return [w6, w7, w8]
    }

    func amberRun(_ repetition: Int) throws -> [Double] {
        let store = try Store(path: workspace.appendingPathComponent("graph-amber\(repetition).amber").path, model: model)
        // The context and its objects are released after the timing, as on the raw side (and in W1).
        var kept: [ManagedObject] = []
        var insertContext: Context? = Context(store: store)
        let w6 = try Workloads.time {
            guard let context = insertContext else { return }
            var made: [ManagedObject] = []
            made.reserveCapacity(authors + books)
            for i in 0..<authors {
                let object = try context.insert(author)
                try object.setValue(.string("Author \(i)"), for: name)
                made.append(object)
            }
            for i in 0..<books {
                let object = try context.insert(book)
                try object.setValue(.string("Book \(i)"), for: title)
                try object.setValue(.double(bench_book_price(Int64(i))), for: price)
                try object.setObject(made[i % authors], for: writtenBy)
                made.append(object)
            }
            try context.save()
            kept = made
        }
        kept.removeAll()
        insertContext = nil
        var sum = 0.0
        var fetched: [ManagedObject] = []
        let context = Context(store: store)
        let w7 = try Workloads.time {
            fetched = try context.fetch(FetchRequest("Author", prefetching: ["books"]))
            for owner in fetched {
                for member in try owner.objects(for: written) {
                    if case .double(let value) = try member.value(for: price) { sum += value }
                }
            }
        }
        fetched.removeAll()
        withExtendedLifetime(context) {}
        let w8Context = Context(store: store)
        var matching = 0
        let w8 = try Workloads.time {
            let found = try w8Context.fetch("Author", where: "ANY books.price > %@", 50)
            for owner in found { if case .string = try owner.value(for: name) { matching += 1 } }
        }
        guard sum > 0, matching > 0 else { throw AmberError.notAStore(path: "graph", reason: "the graph workloads read nothing") }
        return [w6, w7, w8]
    }
}
