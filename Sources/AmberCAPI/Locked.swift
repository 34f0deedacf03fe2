import Foundation

/// State behind a lock. The C API's tables hold non-Sendable core objects
/// (contexts, objects) that are only touched under the lock and, for
/// contexts and objects, only on their owning thread (checked per call).
final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) { self.state = state }

    @inline(__always)
    func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
