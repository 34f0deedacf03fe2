import Synchronization

/// What layers above the model work out once per entity and keep with it
/// (the handles a generated class resolves), by key; thread-safe, as a
/// bound model is shared across threads.
package final class EntityAttachments: Sendable {
    private let contents = Mutex<[ObjectIdentifier: AnyObject & Sendable]>([:])

    package init() {}

    /// The value kept for `key`, made by `make` the first time; if two threads
    /// make it at once, the first one kept is the one both get.
    package func value<T: AnyObject & Sendable, E: Error>(for key: ObjectIdentifier, as type: T.Type = T.self,
                                              make: () throws(E) -> T) throws(E) -> T
    {
        if let kept = contents.withLock({ $0[key] }) as? T { return kept }
        let made = try make()
        return contents.withLock { contents in
            if let kept = contents[key] as? T { return kept }
            contents[key] = made
            return made
        }
    }
}
