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

    /// The model a SQL store's metadata holds, bound against `registry`, to
    /// open the store with it (a program such as `amber` opening a store it did not make).
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` without a
    ///   model row or with one that is not a model; the binding's
    ///   ``/AmberValues/AmberError/invalidModel(_:)`` as it is, so a missing
    ///   transformer or value class is named with how to supply it.
    package static func existing(in metadata: [String: String], place: String, registry: Registry) throws(AmberError) -> Model {
        guard let json = metadata["model"] else { throw .notAStore(path: place, reason: "no model in the metadata table") }
        let description: ModelDescription
        do throws(AmberError) {
            description = try ModelDescription(json: Data(json.utf8))
        } catch {
            throw .notAStore(path: place, reason: "the stored model cannot be read: \(error)")
        }
        return try Model(description, registry: registry)
    }
}
