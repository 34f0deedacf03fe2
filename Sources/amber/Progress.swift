import ArgumentParser
import Foundation

/// When a command shows its progress on standard error.
enum ProgressMode: String, ExpressibleByArgument, CaseIterable {
    /// Once an operation has run for half a second: as a bar on a
    /// terminal, else as a line per finished step.
    case auto
    /// From the start, a bar on a terminal; elsewhere a line at every tenth
    /// of each step and when it ends.
    case always
    /// Never.
    case never
}

/// `--progress auto|always|never`, shared by the commands that can run long.
struct ProgressOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Progress on standard error: auto (once an operation has run for half a second), always or never.",
                               valueName: "when"))
    var progress: ProgressMode = .auto

    /// A progress display following this option.
    func bar() -> ProgressBar { ProgressBar(mode: progress) }
}

/// Progress on standard error: a one-line bar on a terminal, else lines a
/// log keeps readable. Quiet in `auto` mode until the operation has run for
/// `delay`, so quick commands print nothing.
final class ProgressBar: @unchecked Sendable {
    private let mode: ProgressMode
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let start = Date()
    private let delay: TimeInterval = 0.5
    private var current = ""
    /// The last percentage drawn (terminal) or tenth written (lines) of the current step.
    private var lastShown = -1
    private var drewBar = false
    private let lock = NSLock()

    init(mode: ProgressMode) { self.mode = mode }

    /// Reports `completed` of `total` for `step` ("copy Book", "write JSON").
    func show(_ step: String, _ completed: Int, of total: Int) {
        lock.lock()
        defer { lock.unlock() }
        if step != current {
            if drewBar { write("\n") }
            (current, lastShown, drewBar) = (step, -1, false)
        }
        guard mode == .always || (mode == .auto && Date().timeIntervalSince(start) >= delay) else { return }
        let fraction = total <= 0 ? 1 : Double(min(completed, total)) / Double(total)
        if isTerminal {
            let percent = Int(fraction * 100)
            guard percent != lastShown else { return }  // a write per change, not per row
            lastShown = percent
            let width = 30, filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            write("\r  \(step) [\(bar)] \(percent)%")
            drewBar = true
            return
        }
        let tenth = Int(fraction * 10)
        let due = completed >= total || (mode == .always && tenth > lastShown)
        guard due, tenth > lastShown else { return }
        lastShown = completed >= total ? 10 : tenth
        write("  \(step): \(completed)/\(total)\n")
    }

    /// Ends the bar's line, if one was drawn.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if drewBar { write("\n") }
        drewBar = false
    }

    /// Writes to standard error after what standard output holds, so the
    /// two keep their order where they go to one place.
    private func write(_ text: String) {
        fflush(nil)  // every output stream: stdout itself is not concurrency-safe to name
        FileHandle.standardError.write(Data(text.utf8))
    }
}
