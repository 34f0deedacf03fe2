import CSQLite
import Foundation

/// An Amber store: an SQLite file (in WAL mode) or an in-memory database,
/// holding one table per entity and a metadata table with the store's UUID,
/// its model's version hash and the model itself.
///
/// A store and the contexts over it are used from one thread at a time.
public final class Store {
    /// The file, or nil for an in-memory store.
    public let path: String?
    /// The model the store was opened with.
    public let model: Model
    /// The store's UUID, fixed when the store is created; part of every object ID URI.
    public let identifier: UUID

    let connection: Connection
    let mappings: [TableMapping]

    private static let metadataTable = "_amber_metadata"
    private static let formatVersion = "1"

    /// Opens the store at `path` with `model`, creating the file and its
    /// tables if the file is missing or empty.
    ///
    /// - Throws: ``AmberError/modelMismatch(store:differences:)`` if the store
    ///   was made with a model of another shape, naming each difference;
    ///   ``AmberError/notAStore(path:reason:)`` for a file that is not an
    ///   Amber store.
    public convenience init(path: String, model: Model) throws(AmberError) {
        let connection = try Connection(path: path, create: true)
        try self.init(connection: connection, path: path, model: model)
    }

    /// Opens an existing store with the model it carries, so a program (such
    /// as the `amber` CLI) can read a store it did not make. The model is
    /// bound against `registry`, which must hold the transformers it names.
    public convenience init(openingExisting path: String, registry: Registry = .shared) throws(AmberError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw .notAStore(path: path, reason: "no such file")
        }
        let connection = try Connection(path: path, create: false)
        let metadata = try Self.readMetadata(connection, path: path)
        guard let json = metadata["model"] else { throw .notAStore(path: path, reason: "no model in the metadata table") }
        let model: Model
        do throws(AmberError) {
            model = try Model(ModelDescription(json: Data(json.utf8)), registry: registry)
        } catch {
            throw .notAStore(path: path, reason: "the stored model cannot be read: \(error)")
        }
        try self.init(connection: connection, path: path, model: model)
    }

    /// An in-memory store with `model`; it lives as long as this object.
    public static func inMemory(model: Model) throws(AmberError) -> Store {
        try Store(connection: Connection(path: ":memory:", create: true), path: nil, model: model)
    }

    private init(connection: Connection, path: String?, model: Model) throws(AmberError) {
        self.connection = connection
        self.path = path
        self.model = model
        self.mappings = model.entities.map(TableMapping.init)
        let place = path ?? ":memory:"
        try Self.configure(connection, inMemory: path == nil, place: place)
        let metadata = try Self.readMetadata(connection, path: place)
        if metadata.isEmpty {
            identifier = UUID()
            try createSchema()
        } else {
            guard metadata["format"] == Self.formatVersion, let uuidText = metadata["store_uuid"],
                  let uuid = UUID(uuidString: uuidText)
            else {
                throw .notAStore(path: place, reason: "unknown store format \(metadata["format"] ?? "(none)")")
            }
            identifier = uuid
            if metadata["model_hash"] != model.versionHash {
                let stored = metadata["model"].flatMap { try? ModelDescription(json: Data($0.utf8)) }
                let differences = stored.map {
                    ModelFingerprint.differences(store: ModelFingerprint($0), model: ModelFingerprint(model.description))
                } ?? []
                throw .modelMismatch(store: place, differences: differences.isEmpty
                    ? ["model version hash \(metadata["model_hash"] ?? "(none)") in the store, \(model.versionHash) in the model"]
                    : differences)
            }
        }
    }

    private static func configure(_ connection: Connection, inMemory: Bool, place: String) throws(AmberError) {
        do throws(AmberError) {
            // WAL lets readers run beside a writer; NORMAL sync is durable across
            // application crashes, which is SQLite's advice for WAL.
            if !inMemory { try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;") }
            try connection.execute("PRAGMA foreign_keys = ON")
        } catch {
            throw .notAStore(path: place, reason: "\(error)")
        }
    }

    /// The metadata table as key → value; empty for a new, empty database.
    private static func readMetadata(_ connection: Connection, path: String) throws(AmberError) -> [String: String] {
        let tables: Statement
        do throws(AmberError) {
            tables = try connection.statement("SELECT name FROM sqlite_schema WHERE type = 'table'")
        } catch {
            throw .notAStore(path: path, reason: "\(error)")
        }
        var names: [String] = []
        while try tables.step() { names.append(tables.string(0)) }
        tables.reset()
        guard names.contains(metadataTable) else {
            if names.isEmpty { return [:] }
            throw .notAStore(path: path, reason: "the database has tables but no \(metadataTable) table")
        }
        let rows = try connection.statement("SELECT key, value FROM \(metadataTable)")
        defer { rows.reset() }
        var metadata: [String: String] = [:]
        while try rows.step() { metadata[rows.string(0)] = rows.string(1) }
        return metadata
    }

    private func createSchema() throws(AmberError) {
        try connection.execute("BEGIN IMMEDIATE")
        do throws(AmberError) {
            try connection.execute("CREATE TABLE \(Self.metadataTable) (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for mapping in mappings {
                for sql in mapping.createSQL { try connection.execute(sql) }
            }
            let insert = try connection.statement("INSERT INTO \(Self.metadataTable) (key, value) VALUES (?, ?)")
            for (key, value) in [("format", Self.formatVersion), ("store_uuid", identifier.uuidString),
                                 ("model_hash", model.versionHash), ("model", model.description.jsonText()),
                                 ("created_by", "Amber \(version)")]
            {
                insert.bind(0, key)
                insert.bind(1, value)
                try insert.run()
            }
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The table mapping of `entity`.
    func mapping(for entity: Entity) -> TableMapping { mappings[entity.index] }
}
