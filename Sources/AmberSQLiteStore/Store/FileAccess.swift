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
    /// write it, so it is opened as immutable (no `-shm`, no `-wal`, no locks).
    case immutable

    /// How the existing file at `path` can be opened.
    static func of(_ path: String) -> FileAccess {
        let files = FileManager.default
        let folder = (path as NSString).deletingLastPathComponent
        if files.isWritableFile(atPath: folder.isEmpty ? "." : folder) && files.isWritableFile(atPath: path) { return .readWrite }
        // Immutable only where no one can write: a writer elsewhere would change pages under an immutable reader.
        var disk = statvfs()
        let readOnlyMount = statvfs(path, &disk) == 0 && disk.f_flag & UInt(ST_RDONLY) != 0
        return readOnlyMount && !files.fileExists(atPath: path + "-wal") ? .immutable : .readOnly
    }

    /// Why a store opened this way refuses to be written, for its errors.
    var refusal: String? {
        switch self {
        case .readWrite: nil
        case .readOnly: "it was opened read-only: this process cannot write its file or folder"
        case .immutable: "it was opened read-only: it is on a read-only disk"
        }
    }
}
