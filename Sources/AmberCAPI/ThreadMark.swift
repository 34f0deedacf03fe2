import AmberHeaders
import Foundation
import Synchronization

/// A thread, and whether it is still running. Each thread that uses a
/// context gets one mark, kept in a thread-specific slot whose destructor
/// records the thread's end. Contexts know their thread by its mark, so no
/// later thread is taken for an ended one (as a reused `pthread_t` would
/// be), and a context whose thread has ended can be freed from another
/// thread (no thread can use it any more) instead of being refused with
/// AMBER_E_WRONG_THREAD from every thread and leaked for good.
final class ThreadMark: Sendable {
    private let ended = Atomic<Bool>(false)

    /// Whether the thread has exited.
    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    /// The calling thread's mark's identity, what handles record as their
    /// owner: unlike a `pthread_t`, never the same for a later thread while
    /// anything holds the mark (a context does).
    static var currentToken: UInt { UInt(bitPattern: ObjectIdentifier(current())) }

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
/// reports, live queries, batches) share: known by its mark, which the
/// context holds, so a later thread given the same `pthread_t` is not it.
struct OwnerThread {
    let mark = ThreadMark.current()

    /// The mark's identity, recorded with each handle as its owner.
    var token: UInt { UInt(bitPattern: ObjectIdentifier(mark)) }

    /// Fails with AMBER_E_WRONG_THREAD unless called on this thread; a
    /// handle being freed may be freed from any thread once this one has ended.
    func check(_ parameter: String, freeing: Bool = false) throws(CAPIError) {
        guard ThreadMark.current() !== mark, !(freeing && mark.hasEnded) else { return }
        throw CAPIError(AMBER_E_WRONG_THREAD, "\(parameter) belongs to another thread (the one that created its context)", origin: parameter)
    }

    /// Runs `body`, which frees a handle of this thread's context: as is on
    /// this thread; from another (once this one has ended) one free at a
    /// time, so two threads freeing what an ended thread left do not race on it.
    func freeing(_ body: () throws(CAPIError) -> Void) throws(CAPIError) {
        if ThreadMark.current() === mark { return try body() }
        try Self.orphans.withLock { (_) throws(CAPIError) in try body() }
    }

    /// Held while another thread frees what an ended thread left.
    private static let orphans = Mutex(())
}
