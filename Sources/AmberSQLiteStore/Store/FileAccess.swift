import Foundation

/// How a store file is opened, from what this process may write: a store in
/// a folder or on a mount it cannot write is opened read-only rather than
/// refused, and says so when something would write it.
enum FileAccess: Equatable {
    /// The file and its folder can be written.
    case readWrite
    /// SQLite's read-only mode: the file cannot be written, or its folder
    /// cannot but holds a log (`-wal`) that readers must see.
    case readOnly
    /// Nothing can be written beside the file (a read-only folder or mount)
    /// and there is no log: opened as immutable, so SQLite makes no `-shm`
    /// and no `-wal` (it could not), and reads the file alone.
    case immutable

    /// How the existing file at `path` can be opened.
    static func of(_ path: String) -> FileAccess {
        let files = FileManager.default
        let folder = (path as NSString).deletingLastPathComponent
        let folderWritable = files.isWritableFile(atPath: folder.isEmpty ? "." : folder)
        if folderWritable && files.isWritableFile(atPath: path) { return .readWrite }
        return folderWritable || files.fileExists(atPath: path + "-wal") ? .readOnly : .immutable
    }

    /// Why a store opened this way refuses to be written, for its errors.
    var refusal: String? {
        switch self {
        case .readWrite: nil
        case .readOnly: "it was opened read-only: this process cannot write its file or folder"
        case .immutable: "it was opened read-only: its folder (or the disk) cannot be written"
        }
    }
}
