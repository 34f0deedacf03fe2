// W1-W4 of Amber's benchmark through GRDB, written as a GRDB user would:
// a record struct with hand-written row decoding and encoding, a colour
// struct stored as its 16 bytes, one DatabasePool in WAL mode with
// `synchronous = NORMAL` (the raw side's settings). Prints the median of
// each workload, in ms, as JSON: {"W1 insert + save": 12.3, ...}, and the
// time of `--round-trips` colour conversions to a database value and back.
//
//     grdb-bench --n N --repetitions R --round-trips T --workspace DIR
//
// With `--memory`, W1 and W2 once, then the process's peak resident memory
// in KiB (VmHWM), as the raw and Amber memory children of amber-bench print it.
import Foundation
import GRDB

/// A colour of four floats, stored as 16 little-endian bytes like the colour plugin's.
struct Color: DatabaseValueConvertible {
    var r, g, b, a: Float

    var databaseValue: DatabaseValue {
        var bytes = Data(count: 16)
        bytes.withUnsafeMutableBytes { target in
            target.storeBytes(of: r.bitPattern.littleEndian, toByteOffset: 0, as: UInt32.self)
            target.storeBytes(of: g.bitPattern.littleEndian, toByteOffset: 4, as: UInt32.self)
            target.storeBytes(of: b.bitPattern.littleEndian, toByteOffset: 8, as: UInt32.self)
            target.storeBytes(of: a.bitPattern.littleEndian, toByteOffset: 12, as: UInt32.self)
        }
        return bytes.databaseValue
    }

    static func fromDatabaseValue(_ dbValue: DatabaseValue) -> Color? {
        guard let bytes = Data.fromDatabaseValue(dbValue), bytes.count == 16 else { return nil }
        return bytes.withUnsafeBytes { source in
            func channel(_ index: Int) -> Float {
                Float(bitPattern: UInt32(littleEndian: source.loadUnaligned(fromByteOffset: 4 * index, as: UInt32.self)))
            }
            return Color(r: channel(0), g: channel(1), b: channel(2), a: channel(3))
        }
    }

    /// The benchmark's colour for item `i` (the raw side's bench_color_for).
    static func forItem(_ i: Int) -> Color {
        Color(r: Float(i % 256) / 255, g: 0.5, b: Float(i % 7) / 7, a: 1)
    }
}

/// A book, with its columns read and written by hand (no Codable).
struct Book: FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "Book"
    var id: Int64?
    var title: String
    var price: Double
    var published: Date
    var color: Color

    init(id: Int64? = nil, title: String, price: Double, published: Date, color: Color) {
        (self.id, self.title, self.price, self.published, self.color) = (id, title, price, published, color)
    }

    init(row: Row) throws {
        id = row[0]
        title = row[1]
        price = row[2]
        // Seconds since 2001 in a REAL column, as Amber and the raw side store dates.
        published = Date(timeIntervalSinceReferenceDate: row[3])
        color = row[4]
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["title"] = title
        container["price"] = price
        container["published"] = published.timeIntervalSinceReferenceDate
        container["color"] = color
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

struct Options {
    var n = 100_000
    var repetitions = 5
    var roundTrips = 1_000_000
    var workspace = FileManager.default.temporaryDirectory.path
    var memory = false

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            if flag == "--memory" {
                memory = true
                continue
            }
            guard let value = rest.popFirst() else { throw ValidationError("\(flag) needs a value") }
            switch flag {
            case "--n": n = Int(value) ?? n
            case "--repetitions": repetitions = Int(value) ?? repetitions
            case "--round-trips": roundTrips = Int(value) ?? roundTrips
            case "--workspace": workspace = value
            default: throw ValidationError("unknown option \(flag)")
            }
        }
    }
}

struct ValidationError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

/// The peak resident memory of this process in KiB (VmHWM; -1 if unknown).
func peakResidentKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
    return -1
}

/// One repetition of W1-W4 on a fresh database (W1 and W2 only with `memoryOnly`); the times in ms.
func run(n: Int, path: String, memoryOnly: Bool = false) throws -> [Double] {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    var configuration = Configuration()
    configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
    let pool = try DatabasePool(path: path, configuration: configuration)
    try pool.write { db in
        try db.execute(sql: "CREATE TABLE Book (id INTEGER PRIMARY KEY, title TEXT, price REAL, published REAL, color BLOB)")
    }
    var times: [Double] = []
    // W1: N records made and inserted in one transaction.
    times.append(try milliseconds {
        try pool.write { db in
            for i in 0..<n {
                var book = Book(title: "Book \(i)", price: Double(i) * 0.5,
                                published: Date(timeIntervalSince1970: 1.7e9 + Double(i)), color: .forItem(i))
                try book.insert(db)
            }
        }
    })
    // W2: every record fetched and every value read. The pool's reader connection is opened
    // first, outside the timer, as Amber's W2 makes its context outside it.
    try pool.read { _ in }
    var books: [Book] = []
    var checksum = 0.0
    times.append(try milliseconds {
        books = try pool.read { db in try Book.fetchAll(db) }
        for book in books {
            checksum += Double(book.title.utf8.count) + book.price + book.published.timeIntervalSinceReferenceDate + Double(book.color.r)
        }
    })
    guard books.count == n, checksum.isFinite else { throw ValidationError("read \(books.count) books of \(n)") }
    if memoryOnly { return times }
    // W3: the titles containing "42", case-insensitively (LIKE folds ASCII), and their prices summed.
    times.append(try milliseconds {
        let found = try pool.read { db in try Book.filter(Column("title").like("%42%")).fetchAll(db) }
        checksum += found.reduce(0) { $0 + $1.price }
    })
    // W4: every 10th record's price changed and saved (that column only).
    times.append(try milliseconds {
        try pool.write { db in
            for index in stride(from: 0, to: books.count, by: 10) {
                books[index].price = Double(index)
                try books[index].update(db, columns: ["price"])
            }
        }
    })
    guard checksum.isFinite else { throw ValidationError("the sums came out as \(checksum)") }
    return times
}

/// Colours to their stored form and back, `count` times, as GRDB converts a record's column.
func roundTrips(_ count: Int) throws -> Double {
    var checksum: Float = 0
    let elapsed = try milliseconds {
        for i in 0..<count {
            guard let back = Color.fromDatabaseValue(Color(r: Float(i & 255), g: 0.5, b: 0.25, a: 1).databaseValue) else {
                throw ValidationError("a colour did not come back")
            }
            checksum += back.r
        }
    }
    guard checksum.isFinite else { throw ValidationError("the colours came back as NaN") }
    return elapsed
}

/// W1-W4 and the round trips `options.repetitions` times, their medians printed as JSON.
func printMedians(_ options: Options, path: String) throws {
    var runs: [[Double]] = []
    for _ in 0..<max(options.repetitions, 1) { runs.append(try run(n: options.n, path: path)) }
    let names = ["W1 insert + save", "W2 fetch all + read", "W3 CONTAINS[c] + sum", "W4 update every 10th + save"]
    var medians: [String: Double] = [:]
    for (step, name) in names.enumerated() {
        let sorted = runs.map { $0[step] }.sorted()
        medians[name] = sorted[sorted.count / 2]
    }
    let trips = try (0..<max(options.repetitions, 1)).map { _ in try roundTrips(options.roundTrips) }.sorted()
    medians["W5 round trips through values"] = trips[trips.count / 2]
    let json = try JSONSerialization.data(withJSONObject: medians, options: [.sortedKeys])
    print(String(decoding: json, as: UTF8.self))
}

do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    let path = URL(fileURLWithPath: options.workspace).appendingPathComponent("grdb-\(getpid()).sqlite").path
    defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
    if options.memory {
        _ = try run(n: options.n, path: path, memoryOnly: true)
        print(peakResidentKiB())
    } else {
        try printMedians(options, path: path)
    }
} catch {
    FileHandle.standardError.write(Data("grdb-bench: \(error)\n".utf8))
    exit(1)
}
