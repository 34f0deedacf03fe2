import Foundation

/// Every error Amber reports. Each case carries the place it concerns
/// (`Book.price`, a JSON path, a position in predicate text) so that the
/// message alone tells the caller what to fix.
public enum AmberError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A model failed to bind; every problem found is listed.
    case invalidModel([ModelProblem])
    /// A JSON model file is malformed at `path` (for example `$.entities[0].attributes[2].type`).
    case invalidJSON(path: String, message: String)
    /// No entity of that name; `suggestion` is the nearest known name, if any.
    case unknownEntity(name: String, suggestion: String?)
    /// No attribute of that name on `entity`; `suggestion` is the nearest known name, if any.
    case unknownAttribute(entity: String, name: String, suggestion: String?)
    /// No relationship of that name on `entity`; `suggestion` is the nearest known name, if any.
    case unknownRelationship(entity: String, name: String, suggestion: String?)
    /// The entity has no fetched property of that name.
    case unknownFetchedProperty(entity: String, name: String, suggestion: String?)
    /// No transformer of that name in the registry; `suggestion` is the nearest registered name, if any.
    case unknownTransformer(name: String, suggestion: String?)
    /// A value of the wrong class, or out of the attribute type's range, was given for `place`.
    case invalidValue(place: String, expected: String, given: String)
    /// An attribute handle of another entity or model was used with an object.
    case foreignAttribute(attribute: String, object: String)
    /// A relationship handle of another entity or model was used with an object.
    case foreignRelationship(relationship: String, object: String)
    /// Predicate text could not be parsed or compiled; `position` is 1-based, in characters.
    case invalidPredicate(position: Int, message: String)
    /// A predicate names an attribute or relationship its entity does not
    /// have; `position` is 1-based, and the message has the nearest name.
    case unknownKeyPath(position: Int, message: String)
    /// A predicate's `$variable` has no value, or a value was given for a
    /// variable the predicate does not have.
    case invalidSubstitution(variable: String, message: String)
    /// No fetch request template of that name in the model; `suggestion` is the nearest known name, if any.
    case unknownTemplate(name: String, suggestion: String?)
    /// A save failed; nothing was written and every pending change is kept.
    case saveFailed([SaveProblem])
    /// The store holds a model that differs from the one given; each difference is listed.
    case modelMismatch(store: String, differences: [String])
    /// The file is not an Amber store (or is damaged).
    case notAStore(path: String, reason: String)
    /// Migrating the store to another model was refused or failed; nothing
    /// changed. Each problem names the entity, attribute, relationship or
    /// object it concerns.
    case migrationFailed(store: String, problems: [String])
    /// An Xcode data model file is malformed: the file, the line (1-based, 0
    /// when unknown) and the element being read.
    case invalidXcodeModel(file: String, line: Int, element: String, message: String)
    /// An object ID that no longer (or never) names an object in the store.
    case objectNotFound(ObjectID)
    /// The object was deleted, or belongs to no context, so it cannot be changed.
    case objectUnavailable(ObjectID, reason: String)
    /// SQLite reported an error.
    case sqlite(code: Int32, message: String)
    /// A value class or transformer declaration is malformed, or a generated
    /// class does not fit the model it is used with.
    case invalidDeclaration(place: String, message: String)
    /// A value class or transformer name is already taken; both sources are named.
    case duplicateName(kind: String, name: String, existing: String, refused: String)
    /// A plugin was refused; nothing of it was registered. `message` names the
    /// class or transformer and what was expected against what was found.
    case pluginRefused(path: String, message: String)
    /// A file is already at `path`, where an operation writes only a new
    /// file (a store's backup); nothing was written.
    case fileExists(path: String)
    /// Another connection (a context of another store handle, or another
    /// process) held the store's write lock for longer than the busy timeout.
    /// Nothing was written and every pending change is kept: retrying may succeed.
    case busy(path: String, timeout: Duration)
    /// A transformer failed or returned a value other than it declared, while
    /// converting `place` (`Book.coverColor`).
    case transformerFailed(place: String, transformer: String, source: String, message: String)
    /// The function of a computed attribute failed or returned a value the
    /// attribute cannot hold, while computing `place` (`Book.publishMonth`).
    case computationFailed(place: String, function: String, source: String, message: String)
    /// Observers or live queries failed while being told of `event` ("saved",
    /// "merged", "refreshed", or "pending" from processing pending changes): what made the event is done (a save is
    /// written), and every observer was called; each failure is listed.
    case observerFailed(event: String, failures: [String])
    /// Text that does not name a store: `part` is what is wrong (`scheme
    /// postgres`, `host example.com`, `path`).
    case invalidStoreURL(url: String, part: String, reason: String)
    /// The store cannot do `capability` (`history`, `backups`): nothing was done.
    case unsupported(store: String, capability: String)
    /// The history asked for cannot be read: a token of another store, a
    /// range already purged, or a store that keeps no history.
    case historyUnavailable(store: String, reason: String)
    /// A database server (PostgreSQL) refused a statement or could not be
    /// reached: `state` is its SQLSTATE (`23505`, `08006`), `message` its
    /// words with the place Amber adds. Nothing a failed save wrote stays.
    case server(store: String, state: String, message: String)
    /// The disk or file system failed the store's file (full, an I/O error,
    /// a file that cannot be written): `message` says what, and what of the
    /// call stands (a save writes nothing, and its context keeps its changes).
    case storageFailed(path: String, message: String)
    /// Model logic in code (a validator, `willSave` or `prepareForDeletion`
    /// of `object`) failed with an error other than a validation problem, or
    /// a hook did what hooks may not (a validator changing objects, a save
    /// from inside a hook): the save or deletion stopped, no pending change
    /// was written, and every one stays in the context.
    case hookFailed(object: ObjectID?, hook: String, message: String)

    public var description: String {
        switch self {
        case .invalidModel(let problems):
            let lines = problems.map { "  \($0)" }.joined(separator: "\n")
            return "the model has \(problems.count) problem\(problems.count == 1 ? "" : "s"):\n\(lines)"
        case .invalidJSON(let path, let message):
            return "\(path): \(message)"
        case .unknownEntity(let name, let suggestion):
            return "\(name): no such entity" + Self.hint(suggestion)
        case .unknownTransformer(let name, let suggestion):
            return "transformer \"\(name)\": no such transformer" + Self.hint(suggestion)
        case .unknownAttribute(let entity, let name, let suggestion):
            return "\(entity).\(name): no such attribute" + Self.hint(suggestion)
        case .unknownRelationship(let entity, let name, let suggestion):
            return "\(entity).\(name): no such relationship" + Self.hint(suggestion)
        case .unknownFetchedProperty(let entity, let name, let suggestion):
            return "\(entity).\(name): no such fetched property" + Self.hint(suggestion)
        case .invalidValue(let place, let expected, let given):
            return "\(place): expected \(expected), given \(given)"
        case .foreignAttribute(let attribute, let object):
            return "\(attribute) is not an attribute of \(object)"
        case .foreignRelationship(let relationship, let object):
            return "\(relationship) is not a relationship of \(object)"
        case .invalidPredicate(let position, let message), .unknownKeyPath(let position, let message):
            return "predicate, position \(position): \(message)"
        case .invalidSubstitution(let variable, let message):
            return "$\(variable): \(message)"
        case .unknownTemplate(let name, let suggestion):
            return "\(name): no such fetch request template" + Self.hint(suggestion)
        case .saveFailed(let problems):
            let lines = problems.map { "  \($0)" }.joined(separator: "\n")
            return "save failed, nothing was written, pending changes are kept (\(problems.count) problem\(problems.count == 1 ? "" : "s")):\n\(lines)"
        case .modelMismatch(let store, let differences):
            return "\(store): the store was made with a different model:\n"
                + differences.map { "  \($0)" }.joined(separator: "\n")
        case .notAStore(let path, let reason):
            return "\(path): not an Amber store: \(reason)"
        case .migrationFailed(let store, let problems):
            return "\(store): migration refused, nothing was changed (\(problems.count) problem\(problems.count == 1 ? "" : "s")):\n"
                + problems.map { "  \($0)" }.joined(separator: "\n")
        case .invalidXcodeModel(let file, let line, let element, let message):
            return "\(file)\(line > 0 ? ":\(line)" : ""): <\(element)>: \(message)"
        case .objectNotFound(let id):
            return "\(id): no such object in the store"
        case .objectUnavailable(let id, let reason):
            return "\(id): \(reason)"
        case .sqlite(let code, let message):
            return "SQLite error \(code): \(message)"
        case .invalidDeclaration(let place, let message):
            return "\(place): \(message)"
        case .duplicateName(let kind, let name, let existing, let refused):
            return "\(kind) \"\(name)\" from \(refused) refused: the name is already registered by \(existing)"
        case .pluginRefused(let path, let message):
            return "\(path): \(message)"
        case .fileExists(let path):
            return "\(path): a file is already there; nothing was written (choose a new path or remove the file)"
        case .busy(let path, let timeout):
            return "\(path): the store is busy: another connection held its write lock for more than the busy timeout "
                + "(\(timeout.milliseconds) ms); nothing was written, pending changes are kept, and retrying may succeed"
        case .transformerFailed(let place, let transformer, let source, let message):
            return "\(place): transformer \"\(transformer)\" (\(source)) \(message)"
        case .computationFailed(let place, let function, let source, let message):
            return "\(place): function \"\(function)\" (\(source)) \(message)"
        case .hookFailed(let object, let hook, let message):
            return (object.map { "\($0): " } ?? "") + "\(hook) failed: \(message); nothing was saved or deleted, every pending change stays"
        case .observerFailed(let event, let failures):
            let done = switch event {
            case "saved": "the save is written"
            case "merged": "the merge is done"
            case "pending": "the live queries show the pending changes"
            default: "the refresh is done"
            }
            return "\(done), but \(failures.count) observer\(failures.count == 1 ? "" : "s") failed:\n"
                + failures.map { "  \($0)" }.joined(separator: "\n")
        case .invalidStoreURL(let url, let part, let reason):
            return "\(url): \(part): \(reason)"
        case .unsupported(let store, let capability):
            return "\(store): this store does not support \(capability); nothing was done"
        case .server(let store, let state, let message):
            return "\(store): the server reported \(state): \(message)"
        case .storageFailed(let path, let message):
            return "\(path): \(message)"
        case .historyUnavailable(let store, let reason):
            return "\(store): the history cannot be read: \(reason)"
        }
    }

    package static func hint(_ suggestion: String?) -> String {
        suggestion.map { "; did you mean \($0)?" } ?? ""
    }
}

/// One problem found while binding a model.
public struct ModelProblem: Sendable, Equatable, CustomStringConvertible {
    /// Where: `Book`, `Book.price`, `Book.indexes[0]`, …
    public var place: String
    /// What is wrong, and where a name was misspelled, the nearest known name.
    public var message: String

    /// A problem at `place`, described by `message`.
    public init(place: String, message: String) {
        self.place = place
        self.message = message
    }

    public var description: String { "\(place): \(message)" }
}

/// One problem that made a save fail.
public struct SaveProblem: Sendable, Equatable, CustomStringConvertible {
    /// The kind of rule that was broken.
    public enum Rule: String, Sendable, Equatable {
        case required, minValue, maxValue, minLength, maxLength, pattern, uniqueness, conflict, store, transformer
        /// A to-many relationship with fewer or more members than its model allows.
        case count
        /// A deleted object whose relationship with the deny rule still points at objects.
        case deny
        /// A link to an object that is deleted or not saved (a one-way or no-action relationship's).
        case relationship
        /// A problem a validator in code reported.
        case validation
    }

    /// The object concerned (nil for a failure of the store itself).
    public var objectID: ObjectID?
    /// The attribute concerned (`Book.title`), or the constraint (`Book(title, author)`).
    public var place: String
    /// The rule broken.
    public var rule: Rule
    /// A sentence naming expected and found.
    public var message: String

    package init(objectID: ObjectID?, place: String, rule: Rule, message: String) {
        self.objectID = objectID
        self.place = place
        self.rule = rule
        self.message = message
    }

    public var description: String {
        objectID.map { "\($0): \(place): \(message)" } ?? "\(place): \(message)"
    }
}

/// The nearest name to `name` among `candidates`, when it is close enough to
/// be a plausible misspelling: at most 1 edit for names of up to 3
/// characters, else at most a third of the length (2 at least). A swap of
/// two neighbouring characters counts as one edit.
package func nearestName(to name: String, in candidates: some Sequence<String>) -> String? {
    let target = Array(name.lowercased())
    var best: (name: String, distance: Int)?
    for candidate in candidates {
        let distance = editDistance(target, Array(candidate.lowercased()))
        if distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
    }
    guard let best, best.distance <= (target.count <= 3 ? 1 : max(2, target.count / 3)) else { return nil }
    return best.name
}

/// Optimal-string-alignment distance (Levenshtein plus adjacent swaps), with three rolling rows.
private func editDistance(_ a: [Character], _ b: [Character]) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var beforePrevious = [Int](repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            current[j] = min(previous[j - 1] + cost, previous[j] + 1, current[j - 1] + 1)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                current[j] = min(current[j], beforePrevious[j - 2] + 1)
            }
        }
        (beforePrevious, previous, current) = (previous, current, beforePrevious)
    }
    return previous[b.count]
}

extension Duration {
    /// The duration in whole milliseconds (rounded down), as SQLite's busy timeout takes it.
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000
    }
}
