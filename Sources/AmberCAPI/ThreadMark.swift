import AmberHeaders
import Foundation
import Synchronization

/// Whether a thread is still running. Each thread that makes a context gets
/// one mark, kept in a thread-specific slot whose destructor records the
/// thread's end: a context whose thread has ended can then be freed from
/// another thread (nothing can use it any more), instead of being refused
/// with AMBER_E_WRONG_THREAD from every thread and leaked for good.
final class ThreadMark: Sendable {
    private let ended = Atomic<Bool>(false)

    /// Whether the thread has exited.
    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    /// The calling thread's mark (made on its first call).
    static func current() -> ThreadMark {
        guard let key else { return ThreadMark() }  // no slot to be had: this thread's end goes unrecorded
        if let stored = pthread_getspecific(key) { return Unmanaged<ThreadMark>.fromOpaque(stored).takeUnretainedValue() }
        let mark = ThreadMark()
        if pthread_setspecific(key, Unmanaged.passRetained(mark).toOpaque()) != 0 { Unmanaged.passUnretained(mark).release() }
        return mark
    }

    /// The slot, made once; its destructor runs as each thread that set it exits (not the main thread,
    /// whose end is the process's).
    private static let key: pthread_key_t? = {
        var key = pthread_key_t()
        let made = pthread_key_create(&key) { stored in
            guard let stored else { return }
            Unmanaged<ThreadMark>.fromOpaque(stored).takeRetainedValue().ended.store(true, ordering: .releasing)
        }
        return made == 0 ? key : nil
    }()
}

/// The thread a context belongs to, which the handles it gives out (objects,
/// reports, live queries, batches) share.
struct OwnerThread {
    let id = pthread_self()
    let mark = ThreadMark.current()

    /// Fails with AMBER_E_WRONG_THREAD unless called on this thread; a
    /// handle being freed may be freed from any thread once this one has ended.
    func check(_ parameter: String, freeing: Bool = false) throws(CAPIError) {
        guard pthread_equal(id, pthread_self()) == 0, !(freeing && mark.hasEnded) else { return }
        throw CAPIError(AMBER_E_WRONG_THREAD, "\(parameter) belongs to another thread (the one that created its context)", origin: parameter)
    }
}
