import AmberValues
import CSQLite

extension AmberError {
    /// This error as the disk failing the file at `path` (SQLite found it
    /// full, met an I/O error, or could not write it), its message ending
    /// with `outcome` (what of the call stands) or, for an I/O error, which
    /// can strike while a commit is being made durable, with `ioOutcome`;
    /// nil for any other error.
    func storageFailure(of path: String, _ outcome: String, ioOutcome: String? = nil) -> AmberError? {
        guard case .sqlite(let code, let message) = self else { return nil }
        let what = switch code & 0xff {
        case SQLITE_FULL: "the disk is full: \(outcome)"
        case SQLITE_IOERR: "the disk reported an I/O error (\(message)): \(ioOutcome ?? outcome)"
        case SQLITE_READONLY: "the file cannot be written (\(message)): \(outcome)"
        default: ""
        }
        return what.isEmpty ? nil : .storageFailed(path: path, message: what)
    }
}
