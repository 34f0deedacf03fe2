import AmberPluginABI
import AmberValues
import Foundation
import Synchronization

/// The host table a plugin library is handed, and what the plugin reports
/// through it. A plugin may keep the table for the life of the process, so
/// it is never freed; there is one per library (however often it is loaded,
/// refused or not), so loads do not add up. (`@unchecked`: `host` never
/// changes after init.)
final class PluginSession: @unchecked Sendable {
    let file: String
    let host: UnsafePointer<amber_plugin_host>

    /// The sessions by library handle. Libraries whose entry ran are never
    /// closed, so a handle here always names the same library.
    private static let sessions = Mutex<[UInt: PluginSession]>([:])

    /// The session of the open `library` (first loaded from `file`).
    static func of(_ library: UnsafeMutableRawPointer, file: String) -> PluginSession {
        sessions.withLock { sessions in
            if let session = sessions[UInt(bitPattern: library)] { return session }
            let session = PluginSession(file: file)
            sessions[UInt(bitPattern: library)] = session
            return session
        }
    }

    /// The session of descriptors registered with no library behind them (the fuzzer's).
    static let detached = PluginSession(file: "(no library)")

    private init(file: String) {
        self.file = file
        let table = UnsafeMutablePointer<amber_plugin_host>.allocate(capacity: 1)
        table.initialize(to: amber_plugin_host(
            struct_size: UInt32(MemoryLayout<amber_plugin_host>.size), abi_version: UInt32(AMBER_PLUGIN_ABI_VERSION),
            log: pluginLog, report_error: pluginReportError, host_data: nil))
        self.host = UnsafePointer(table)
        // The table points back at this session, which `sessions` keeps alive.
        table.pointee.host_data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// ": what the plugin reported on this thread" since the last clear, then forgets it.
    var reportedSuffix: String { PluginReports.take() }

    static func from(_ host: UnsafePointer<amber_plugin_host>?) -> PluginSession? {
        guard let data = host?.pointee.host_data else { return nil }
        return Unmanaged<PluginSession>.fromOpaque(data).takeUnretainedValue()
    }

    /// A message from plugin C code: bounded, and invalid UTF-8 repaired rather than trusted.
    static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "(NULL message)" }
        let length = strnlen(pointer, PluginLoader.maximumStringLength)
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}

private let pluginLog: @convention(c) (UnsafePointer<amber_plugin_host>?, Int32, UnsafePointer<CChar>?) -> Void = { host, level, message in
    let names = ["debug", "info", "warning", "error"]
    let label = names.indices.contains(Int(level)) ? names[Int(level)] : "level \(level)"
    let file = PluginSession.from(host)?.file ?? "plugin"
    FileHandle.standardError.write(Data("amber plugin \(file) [\(label)]: \(PluginSession.text(message))\n".utf8))
}

private let pluginReportError: @convention(c) (UnsafePointer<amber_plugin_host>?, UnsafePointer<CChar>?) -> Void = { _, message in
    PluginReports.add(PluginSession.text(message))
}

/// What plugins said through report_error, per thread: a message belongs to
/// the load or the call running on the thread that reported it.
enum PluginReports {
    final class Box {
        var messages: [String] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            // A thread that ends holding messages no longer counts among those that may.
            forget(Unmanaged<Box>.fromOpaque(pointer).takeUnretainedValue())
            Unmanaged<Box>.fromOpaque(pointer).release()
        }
        return key
    }()

    private static var box: Box {
        if let pointer = pthread_getspecific(key) { return Unmanaged<Box>.fromOpaque(pointer).takeUnretainedValue() }
        let box = Box()
        pthread_setspecific(key, Unmanaged.passRetained(box).toOpaque())
        return box
    }

    /// How many threads may hold messages. Calls check it before touching
    /// their thread's box, so a call on the hot path costs one relaxed load
    /// while no plugin has reported anything.
    private static let threadsWithMessages = Atomic<Int>(0)

    /// The number of threads that may hold messages (for tests).
    package static var threadsHoldingMessages: Int { threadsWithMessages.load(ordering: .relaxed) }

    static func add(_ message: String) {
        let box = box
        if box.messages.isEmpty { threadsWithMessages.add(1, ordering: .relaxed) }
        box.messages.append(message)
    }

    /// Forgets this thread's messages, before a call whose failure they must not explain.
    @inline(__always)
    static func clear() {
        guard threadsWithMessages.load(ordering: .relaxed) != 0 else { return }
        forget(box)
    }

    /// ": messages" (or "") and forgets them.
    static func take() -> String {
        guard threadsWithMessages.load(ordering: .relaxed) != 0 else { return "" }
        let box = box
        defer { forget(box) }
        return box.messages.isEmpty ? "" : ": " + box.messages.joined(separator: "; ")
    }

    private static func forget(_ box: Box) {
        guard !box.messages.isEmpty else { return }
        box.messages.removeAll()
        threadsWithMessages.subtract(1, ordering: .relaxed)
    }
}
