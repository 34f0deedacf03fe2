import AmberValues
import CSQLite
import Foundation

/// Binary values Core Data keeps with "Allows External Storage": the
/// column's first byte says where the bytes are, 1 for the rest of the
/// column, 2 for a file (named by the rest) in `.<store>_SUPPORT/_EXTERNAL_DATA/`
/// beside the store. This is the layout people who read Apple's stores
/// report; no fixture here shows it, so anything else is refused, never
/// guessed, and a file name must be a plain name in that folder.
final class CoreDataExternalData {
    /// The folder external values are kept in.
    let folder: URL

    /// A value larger than this in a file is refused (it would be read whole into memory).
    static let largestFile = 1 << 30

    /// The marker bytes, and the one Amber writes.
    static let inline: UInt8 = 1, inFile: UInt8 = 2

    /// The external-data folder of the store at `path`.
    init(storePath path: String) {
        let store = URL(fileURLWithPath: path)
        folder = store.deletingLastPathComponent()
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
            let file = folder.appendingPathComponent(name)
            guard let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int, size <= Self.largestFile,
                  let data = try? Data(contentsOf: file)
            else {
                return .failure(.invalidValue(place: place, expected: "a readable file of at most 1 GiB", given: file.path))
            }
            return .success(data)
        default:
            return .failure(.invalidValue(place: place, expected: "Core Data's external-storage layout (a first byte of 1 or 2)",
                                          given: "a first byte of \(marker)"))
        }
    }
}

extension Connection {
    /// Registers `amber_coredata_external(column, place)`, which the views
    /// call for external-storage columns: the value's bytes, or an error naming `place`.
    func registerExternalData(_ external: CoreDataExternalData) throws(AmberError) {
        let box = Unmanaged.passRetained(external).toOpaque()
        // Not direct-only: the temporary views call it. It reads only plain file names in the store's own folder.
        let rc = sqlite3_create_function_v2(handle, "amber_coredata_external", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box,
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
    let length = Int(sqlite3_value_bytes(column))
    let bytes = UnsafeRawBufferPointer(start: sqlite3_value_blob(column), count: length)
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
