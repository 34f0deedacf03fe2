import Amber
import CSQLite
import Foundation

// Quick W1/W2 check: Amber vs raw SQLite, same process, same schema.
let n = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 100_000
let dir = FileManager.default.temporaryDirectory.appendingPathComponent("amber-bench-\(getpid())")
try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: dir) }

func time(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

let model = try Model(ModelDescription {
    EntityDescription("Book") {
        Attribute.string("title")
        Attribute.double("price")
        Attribute.date("published")
    }
})
nonisolated(unsafe) var run = 0
func amber() throws -> (Double, Double) {
    run += 1
    let path = dir.appendingPathComponent("a\(run).amber").path
    let store = try Store(path: path, model: model)
    let e = try model.entity(named: "Book")
    let (t, p, d) = (try e.attribute(named: "title"), try e.attribute(named: "price"), try e.attribute(named: "published"))
    let w1 = try time {
        let c = Context(store: store)
        for i in 0..<n {
            let o = try c.insert(e)
            try o.setValue(.string("Book \(i)"), for: t)
            try o.setValue(.double(Double(i) * 0.5), for: p)
            try o.setValue(.date(Date(timeIntervalSinceReferenceDate: Double(i))), for: d)
        }
        try c.save()
    }
    var sum = 0.0
    let w2 = try time {
        let c = Context(store: store)
        for o in try c.fetch(FetchRequest("Book")) {
            _ = try o.value(for: t)
            if case .double(let x) = try o.value(for: p) { sum += x }
            _ = try o.value(for: d)
        }
    }
    return (w1, w2)
}
func raw() -> (Double, Double) {
    run += 1
    let path = dir.appendingPathComponent("r\(run).db").path
    var db: OpaquePointer?
    sqlite3_open(path, &db)
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE Book(_pk INTEGER PRIMARY KEY, _entity INTEGER, _version INTEGER DEFAULT 1, title TEXT, price REAL, published REAL)", nil, nil, nil)
    let T = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    let w1 = time {
        var s: OpaquePointer?
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        sqlite3_prepare_v2(db, "INSERT INTO Book(_entity,title,price,published) VALUES (1,?,?,?)", -1, &s, nil)
        for i in 0..<n {
            sqlite3_bind_text(s, 1, "Book \(i)", -1, T)
            sqlite3_bind_double(s, 2, Double(i) * 0.5)
            sqlite3_bind_double(s, 3, Double(i))
            sqlite3_step(s); sqlite3_reset(s)
        }
        sqlite3_finalize(s)
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
    }
    struct Row { var pk: Int64; var title: String; var price: Double; var published: Double }
    var rows: [Row] = []
    let w2 = time {
        var s: OpaquePointer?
        sqlite3_prepare_v2(db, "SELECT _pk, _version, title, price, published FROM Book", -1, &s, nil)
        while sqlite3_step(s) == SQLITE_ROW {
            rows.append(Row(pk: sqlite3_column_int64(s, 0), title: String(cString: sqlite3_column_text(s, 2)),
                            price: sqlite3_column_double(s, 3), published: sqlite3_column_double(s, 4)))
        }
        sqlite3_finalize(s)
    }
    sqlite3_close(db)
    return (w1, w2)
}
var a1: [Double] = [], a2: [Double] = [], r1: [Double] = [], r2: [Double] = []
for _ in 0..<5 {
    let r = raw(); r1.append(r.0); r2.append(r.1)
    let a = try amber(); a1.append(a.0); a2.append(a.1)
}
func median(_ x: [Double]) -> Double { x.sorted()[x.count / 2] }
print(String(format: "W1 insert+save: amber %.1f ms, raw %.1f ms, ratio %.2f", median(a1), median(r1), median(a1) / median(r1)))
print(String(format: "W2 fetch+read:  amber %.1f ms, raw %.1f ms, ratio %.2f", median(a2), median(r2), median(a2) / median(r2)))
