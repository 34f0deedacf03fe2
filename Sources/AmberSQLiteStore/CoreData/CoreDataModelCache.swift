import AmberModel
import AmberTransformers
import AmberValues
import CSQLite
import CZlib
import Foundation

/// The model a store Core Data wrote keeps of itself: `Z_MODELCACHE`, raw
/// DEFLATE around the keyed archive of the managed object model, which
/// ``/AmberModel/XcodeModelImport/init(compiledModel:file:options:)`` reads.
enum CoreDataModelCache {
    /// The inflated archive in the store `connection` opened.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` for a
    ///   store without a model cache, or one that does not inflate (damaged,
    ///   or inflating past the size a model file may have).
    static func archive(_ connection: Connection, place: String) throws(AmberError) -> Data {
        let statement = try connection.statement("SELECT Z_CONTENT FROM main.Z_MODELCACHE LIMIT 1")
        defer { statement.reset() }
        guard try statement.step() else {
            throw .notAStore(path: place, reason: "the store keeps no model of itself (Z_MODELCACHE is empty): open it with the model it was made with")
        }
        guard statement.columnType(0) == SQLITE_BLOB else {
            throw .notAStore(path: place, reason: "its model cache (Z_MODELCACHE) is not a blob: open it with the model it was made with")
        }
        return try statement.withBytes(0) { (bytes) throws(AmberError) in try inflate(bytes, place: place) }
    }

    /// Raw DEFLATE (no zlib header) → the bytes it holds, at most ``ModelLimits/fileBytes``.
    static func inflate(_ input: UnsafeRawBufferPointer, place: String) throws(AmberError) -> Data {
        func refuse(_ reason: String) -> AmberError { .notAStore(path: place, reason: "its model cache (Z_MODELCACHE) \(reason)") }
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw refuse("cannot be inflated: zlib did not start") }
        defer { inflateEnd(&stream) }
        guard let base = input.baseAddress?.assumingMemoryBound(to: Bytef.self), input.count <= Int(UInt32.max) else { throw refuse("is empty") }
        stream.next_in = UnsafeMutablePointer(mutating: base)
        stream.avail_in = uInt(input.count)
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(buffer.count)
                let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                return (status, buffer.count - Int(stream.avail_out))
            }
            output.append(contentsOf: chunk[..<produced])
            guard output.count <= ModelLimits.fileBytes else { throw refuse("inflates past \(ModelLimits.fileBytes) bytes") }
            switch status {
            case Z_STREAM_END: return output
            case Z_OK: guard produced > 0 || stream.avail_in > 0 else { throw refuse("ends before its last block") }
            default: throw refuse("is damaged (zlib \(status))")
            }
        }
    }
}

extension SQLiteStore {
    /// The model the store Core Data wrote at `path` keeps of itself
    /// (`Z_MODELCACHE`), imported as an Xcode model is, with the import's
    /// notes; transformers are looked up in `registry`.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` for a missing file, a file
    ///   that is not a Core Data store, or one without a readable model cache;
    ///   ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)`` for a cached
    ///   model Amber cannot read.
    package static func coreDataModel(atPath path: String, registry: Registry) throws(AmberError) -> XcodeModelImport {
        guard FileManager.default.fileExists(atPath: path) else { throw .notAStore(path: path, reason: "no such file") }
        let connection = try Connection(path: path, create: false, readOnly: true, busyTimeout: .seconds(5))
        guard try CoreDataLayout.describes(connection) else {
            throw .notAStore(path: path, reason: "not a Core Data store (no Z_PRIMARYKEY and Z_METADATA tables)")
        }
        let imported = try XcodeModelImport(compiledModel: CoreDataModelCache.archive(connection, place: path), file: "\(path) (Z_MODELCACHE)",
                                            options: XcodeImportOptions(registry: registry))
        // The cache does not say which attributes keep their bytes outside the row: whoever reads such a store should know.
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: CoreDataExternalData.folder(ofStoreAt: path).path, isDirectory: &isFolder),
              isFolder.boolValue else { return imported }
        return imported.noting(XcodeImportNote(place: "model", message: "the store has an external data folder (_SUPPORT/_EXTERNAL_DATA beside it), "
            + "and its model cache does not say which binary attributes use it: they read with their marker byte; open the store with the app's model",
                                               kind: .notHonoured))
    }
}
