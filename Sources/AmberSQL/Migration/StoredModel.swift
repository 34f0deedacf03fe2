import AmberModel
import AmberTransformers
import AmberValues
import Foundation

extension Model {
    /// The model a SQL store's metadata holds (its `model` row), bound
    /// against `registry`: what a migration maps from.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` without a
    ///   model row; ``/AmberValues/AmberError/migrationFailed(store:problems:)``
    ///   for one that cannot be bound (its transformers missing, say).
    package static func stored(in metadata: [String: String], place: String, registry: Registry) throws(AmberError) -> Model {
        guard let json = metadata["model"] else { throw .notAStore(path: place, reason: "no model in the metadata table") }
        do throws(AmberError) {
            return try Model(ModelDescription(json: Data(json.utf8)), registry: registry)
        } catch {
            throw .migrationFailed(store: place, problems: ["the store's model cannot be bound, so its values cannot be read: \(error)"])
        }
    }
}
