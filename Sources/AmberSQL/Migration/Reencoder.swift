import AmberModel
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// The re-encoding of transformed columns as a migration copies them: a
/// stored value is decoded with the source chain, checked against the
/// destination's value class, and encoded with the destination chain (in
/// SQLite through SQL function `amber_reencode(value, key, column)` as the
/// copy reads it; on PostgreSQL after the copy). The first value that cannot
/// be moved stops the migration, and ``takeFailure()`` names its object.
package final class Reencoder {
    package struct Column {
        package let entity: Entity
        package let encoder: Attribute
        package let oldEncoder: Attribute
    }

    package let columns: [Column]
    private let store: UUID
    private let progress: (@Sendable (MigrationProgress) throws -> Void)?
    private var failure: String?
    /// Values moved per column, for progress.
    private var moved: [Int]

    package init(_ columns: [Column], store: UUID, progress: (@Sendable (MigrationProgress) throws -> Void)?) {
        self.columns = columns
        self.store = store
        self.progress = progress
        self.moved = Array(repeating: 0, count: columns.count)
    }

    /// The stored value for `stored` of row `key` in column `index`, or nil after recording why not.
    package func move(_ stored: Value, key: Int64, column index: Int) -> Value? {
        guard columns.indices.contains(index) else {
            failure = "amber_reencode was called for column \(index), which this migration does not re-encode"
            return nil
        }
        let column = columns[index]
        func place() -> String { "\(column.encoder) of \(ObjectID(entityName: column.entity.name, store: store, key: .permanent(key)))" }
        do throws(AmberError) {
            guard let codec = column.encoder.codec, let oldCodec = column.oldEncoder.codec else { return stored }
            let value: Value
            do throws(TransformerFailure) { value = try oldCodec.decode(stored) } catch { throw error.error(at: place() + " (decoding with the old chain)") }
            let checked = try column.encoder.check(value)
            let encoded: Value
            do throws(TransformerFailure) { encoded = try codec.encode(checked) } catch { throw error.error(at: place() + " (encoding with the new chain)") }
            moved[index] += 1
            if moved[index] % 10_000 == 0 { try report(index) }
            return encoded
        } catch .migrationFailed(_, let problems) {
            failure = problems.first
        } catch {
            failure = "\(place()): cannot be moved to the new chain: \(error)"
        }
        return nil
    }

    /// Reports the columns' final counts (once their table is copied).
    package func finish() throws(AmberError) {
        for index in columns.indices where moved[index] % 10_000 != 0 || moved[index] == 0 { try report(index) }
    }

    private func report(_ index: Int) throws(AmberError) {
        try MigrationProgress.report(MigrationProgress(step: "re-encode \(columns[index].entity.name).\(columns[index].encoder.name)",
                                                       completed: moved[index], total: moved[index]), to: progress)
    }

    /// Why the last statement failed, if a value could not be moved; cleared.
    package func takeFailure() -> String? {
        defer { failure = nil }
        return failure
    }
}
