import AmberValues
import CSQLite
import Foundation

/// Binary values Core Data keeps with "Allows External Storage": the
/// column's first byte says where the bytes are, 1 for the rest of the
/// column, 2 for a file (named by the rest) in `.<store>_SUPPORT/_EXTERNAL_DATA/`
/// beside the store. This is the layout people who read Apple's stores
/// report; no fixture here shows it, so anything else is refused, never
/// guessed. A file must be a regular file with a plain name in that folder
/// (a symbolic link is refused), and no larger than SQLite holds in a value.
final class CoreDataExternalData {
    /// The folder external values are kept in.
    let folder: URL
    /// The largest value read from a file: what SQLite holds in one value.
    let largestFile: Int

    /// The marker bytes, and the one Amber writes.
    static let inline: UInt8 = 1, inFile: UInt8 = 2

    /// The external-data folder of the store at `path`; values up to `largestFile` bytes.
    init(storePath path: String, largestFile: Int) {
        folder = Self.folder(ofStoreAt: path)
        self.largestFile = largestFile
    }

    /// `.<store name>_SUPPORT/_EXTERNAL_DATA` beside the store at `path`.
    static func folder(ofStoreAt path: String) -> URL {
        let store = URL(fileURLWithPath: path)
        return store.deletingLastPathComponent()
            .appendingPathComponent(".\(store.deletingPathExtension().lastPathComponent)_SUPPORT")
            .appendingPathComponent("_EXTERNAL_DATA")
    }

    /// The bytes `column` stands for, or why it cannot be read.
    func bytes(of column: UnsafeRawBufferPointer, place: String) -> Result<Data, AmberError> {
        guard let marker = column.first else {
            return .failure(.invalidValue(place: place, expected: "a marker byte (1 or 2) and a value", given: "no bytes"))
        }
        let rest = Data(column.dropFirst())
        switch marker {
        case Self.inline:
            return .success(rest)
        case Self.inFile:
            let name = String(decoding: rest.prefix { $0 != 0 }, as: UTF8.self)
            guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
                return .failure(.invalidValue(place: place, expected: "the name of a file in \(folder.path)", given: "\"\(name)\""))
            }
            return read(folder.appendingPathComponent(name).path).mapError { reason in
                .invalidValue(place: place, expected: "a regular file of at most \(largestFile) bytes", given: "\(folder.path)/\(name): \(reason)")
            }
        default:
            return .failure(.invalidValue(place: place, expected: "Core Data's external-storage layout (a first byte of 1 or 2)",
                                          given: "a first byte of \(marker)"))
        }
    }

    /// Why a file cannot be read, as an error's text.
    struct Reason: Error, CustomStringConvertible {
        let description: String
    }

    /// The bytes of the regular file at `path`, through one descriptor
    /// (no symbolic link followed, its size taken from what was opened, never
    /// more than ``largestFile`` read).
    private func read(_ path: String) -> Result<Data, Reason> {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(Reason(description: String(cString: strerror(errno)))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return .failure(Reason(description: String(cString: strerror(errno)))) }
        guard status.st_mode & S_IFMT == S_IFREG else { return .failure(Reason(description: "not a regular file")) }
        guard status.st_size >= 0, status.st_size <= largestFile else { return .failure(Reason(description: "\(status.st_size) bytes")) }
        var data = Data(count: Int(status.st_size))
        var filled = 0
        let failure: Reason? = data.withUnsafeMutableBytes { buffer in
            while filled < buffer.count {
                let got = Foundation.read(descriptor, buffer.baseAddress?.advanced(by: filled), buffer.count - filled)
                if got < 0, errno == EINTR { continue }
                guard got > 0 else { return Reason(description: got < 0 ? String(cString: strerror(errno)) : "shorter than its size") }
                filled += got
            }
            return nil
        }
        return failure.map { .failure($0) } ?? .success(data)
    }
}

extension Connection {
    /// Registers `amber_coredata_external(column, place)`, which the views
    /// call for external-storage columns: the value's bytes, or an error naming `place`.
    func registerExternalData(_ external: CoreDataExternalData) throws(AmberError) {
        let box = Unmanaged.passRetained(external).toOpaque()
        // Direct-only: Amber's temporary views call it; views and triggers stored in the file cannot.
        let rc = sqlite3_create_function_v2(handle, "amber_coredata_external", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, box,
                                            externalDataFunction, nil, nil, releaseExternalData)
        // On failure SQLite has already called the destructor (releasing the box).
        guard rc == SQLITE_OK else { throw error(rc, message: "cannot register amber_coredata_external: \(String(cString: sqlite3_errstr(rc)))") }
    }
}

private let releaseExternalData: @convention(c) (UnsafeMutableRawPointer?) -> Void = { box in
    if let box { Unmanaged<CoreDataExternalData>.fromOpaque(box).release() }
}

/// amber_coredata_external(column, place): NULL stays NULL; see ``CoreDataExternalData``.
private let externalDataFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, count, arguments in
    guard let arguments, count == 2, let box = sqlite3_user_data(context), let column = arguments[0] else {
        return sqlite3_result_error(context, "amber_coredata_external takes a column and its place", -1)
    }
    guard sqlite3_value_type(column) != SQLITE_NULL else { return sqlite3_result_null(context) }
    let place = sqlite3_value_text(arguments[1]).map { String(cString: $0) } ?? "a column"
    // The pointer first, then its length, as SQLite documents.
    let start = sqlite3_value_blob(column)
    let bytes = UnsafeRawBufferPointer(start: start, count: start == nil ? 0 : Int(sqlite3_value_bytes(column)))
    switch Unmanaged<CoreDataExternalData>.fromOpaque(box).takeUnretainedValue().bytes(of: bytes, place: place) {
    case .success(let data):
        data.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return sqlite3_result_zeroblob(context, 0) }
            sqlite3_result_blob64(context, base, sqlite3_uint64(raw.count), sqliteTransient)
        }
    case .failure(let error):
        sqlite3_result_error(context, "\(error)", -1)
    }
}
