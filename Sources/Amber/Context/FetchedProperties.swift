import AmberModel
import AmberValues

// MARK: - Fetched properties

extension ManagedObject {
    /// The objects of fetched property `key` (declared in the model, see
    /// ``/AmberModel/FetchedPropertyDescription``): fetched in this object's
    /// context the first time it is read, with `$FETCH_SOURCE` standing for
    /// this object (and `$FETCH_SOURCE.path` for its value there), then kept
    /// until ``Context/refresh(_:mergeChanges:)`` refreshes the object, as Core
    /// Data keeps them. Its fetch asks the store alone (saved objects, less
    /// those deleted here). A fetched property is read-only and one-way: nothing
    /// points back, and saving never writes it.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownFetchedProperty(entity:name:suggestion:)``
    ///   with the nearest name; ``/AmberValues/AmberError/objectUnavailable(_:reason:)``
    ///   for an object without a context; what the fetch throws.
    public func fetchedObjects(forKey key: String) throws(AmberError) -> [ManagedObject] {
        guard let context else { throw .objectUnavailable(objectID, reason: "it no longer belongs to a context") }
        let property = try context.model.fetchedProperty(named: key, of: entity)
        if let kept = context.fetchedResults[objectID]?[key] { return kept }
        var source: [String: Value] = [:]
        for path in property.sourceKeyPaths { source[path] = try value(atSourcePath: path) }
        // As saved: the result is kept until the object is refreshed, and a rollback must not leave it holding new objects.
        var request = try property.request(source: source)
        request.includesPendingChanges = false
        let objects = try context.fetch(request)
        // Whatever this replaces (a fetch inside the fetch may have filled it) is released after the dictionary is changed.
        var entry = context.fetchedResults.removeValue(forKey: objectID) ?? [:]
        let replaced = entry.updateValue(objects, forKey: key)
        context.fetchedResults[objectID] = entry
        withExtendedLifetime(replaced) {}
        return objects
    }

    /// This object (an empty path) or its value at `path`: attributes, and
    /// to-ones as their objects' IDs (nil anywhere along the way reads as nil).
    private func value(atSourcePath path: String) throws(AmberError) -> Value {
        guard !path.isEmpty else { return .objectID(objectID) }
        var object = self
        let names = path.split(separator: ".").map(String.init)
        for (position, name) in names.enumerated() {
            let isLast = position == names.count - 1
            if isLast, object.entity.attributes.contains(where: { $0.name == name }) { return try object.value(forKey: name) }
            guard let next = try object.object(forKey: name) else { return .null }
            if isLast { return .objectID(next.objectID) }
            object = next
        }
        return .null
    }
}
