import Synchronization

/// State behind a lock. The C API's tables hold non-Sendable core objects
/// (contexts, objects) that are only touched under the lock and, for
/// contexts and objects, only on their owning thread (checked per call).
/// The lock is a `Mutex` (a futex: no allocation, no dynamic exclusivity
/// check), so a handle lookup costs little per call.
final class Locked<State>: @unchecked Sendable {
    private let mutex = Mutex(())
    nonisolated(unsafe) private let storage: UnsafeMutablePointer<State>

    init(_ state: State) {
        storage = UnsafeMutablePointer<State>.allocate(capacity: 1)
        storage.initialize(to: state)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    @inline(__always)
    func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        let storage = self.storage
        // The result leaves through a local, not Mutex's `sending` return: the
        // tables' values stay on the threads that own them (see above).
        var result: R?
        try mutex.withLock { (_) throws(E) in result = try body(&storage.pointee) }
        return result.unsafelyUnwrapped  // set: the body returned without throwing
    }
}
