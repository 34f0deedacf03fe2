import AmberValues

/// How far a migration has come: reported to ``Store/Options/migrationProgress``
/// after each step and every few thousand values of a long one.
public struct MigrationProgress: Sendable, CustomStringConvertible {
    /// What is being done: `copy Book`, `re-encode Book.cover`, `compute Author.bookCount`.
    public let step: String
    /// Units of the step done so far (rows).
    public let completed: Int
    /// Units of the step in all.
    public let total: Int

    package init(step: String, completed: Int, total: Int) {
        (self.step, self.completed, self.total) = (step, completed, total)
    }

    public var description: String { "\(step): \(completed)/\(total)" }

    /// Tells `handler` of `step`; an error it throws cancels the migration.
    package static func report(_ step: MigrationProgress, to handler: (@Sendable (MigrationProgress) throws -> Void)?) throws(AmberError) {
        do {
            try handler?(step)
        } catch {
            throw .migrationFailed(store: "", problems: ["cancelled by the progress handler at \(step): \(error)"])
        }
    }
}
