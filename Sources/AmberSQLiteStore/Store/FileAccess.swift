import AmberValues
import Foundation

/// How a store file is opened, from what this process may write: a store in
/// a folder or on a mount it cannot write is opened read-only rather than
/// refused, and says so when something would write it.
enum FileAccess: Equatable {
    /// The file and its folder can be written.
    case readWrite
    /// SQLite's read-only mode: this process cannot write the file or its
    /// folder, but others may (SQLite then needs the log's index, `-shm`,
    /// there or makeable, to read alongside a writer).
    case readOnly
    /// The file is on a read-only mount and there is no log: nothing can
    /// write it, so it is opened as immutable (no `-shm`, no `-wal`, no
    /// locks). This assumes no process writes it through another mount
    /// (a volume mounted read-only here and read-write elsewhere) while it is open.
    case immutable
    /// This process cannot write the folder, the disk can be written, and
    /// no one has the store open (no log): SQLite would have to make the
    /// log's index (`-shm`) beside it to read it, and cannot.
    case unreadable

    /// How the existing file at `path` can be opened.
    static func of(_ path: String) -> FileAccess {
        let files = FileManager.default
        let folder = (path as NSString).deletingLastPathComponent
        if files.isWritableFile(atPath: folder.isEmpty ? "." : folder) && files.isWritableFile(atPath: path) { return .readWrite }
        // Immutable only where no one can write: a writer elsewhere would change pages under an immutable reader.
        var disk = statvfs()
        let readOnlyMount = statvfs(path, &disk) == 0 && disk.f_flag & UInt(ST_RDONLY) != 0
        let logged = files.fileExists(atPath: path + "-wal")
        if readOnlyMount && !logged { return .immutable }
        return logged || files.isWritableFile(atPath: folder.isEmpty ? "." : folder) ? .readOnly : .unreadable
    }

    /// Refuses a store that cannot be read here (``unreadable``), saying why.
    func requireReadable(_ path: String) throws(AmberError) {
        if self == .unreadable, let refusal { throw .notAStore(path: path, reason: "it cannot be read here: \(refusal)") }
    }

    /// Why a store opened this way refuses to be written, for its errors.
    var refusal: String? {
        switch self {
        case .readWrite: nil
        case .readOnly: "it was opened read-only: this process cannot write its file or folder"
        case .immutable: "it was opened read-only: it is on a read-only disk"
        case .unreadable: "this process cannot write its folder, where SQLite must make the log's index (-shm) to read it "
            + "while no one has it open: copy the store elsewhere, or open it as a user who can write the folder"
        }
    }
}
