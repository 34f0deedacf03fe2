import Amber
import AmberHeaders
import Foundation

/// An error on its way to a C caller: a status code, a message and what it concerns.
struct CAPIError: Error, CustomStringConvertible {
    /// One problem a save or a bind listed, as amber_last_error_problem gives it.
    struct Problem {
        var objectURI = ""
        var place: String
        var rule = ""
        var message: String
    }

    let code: Int32
    let message: String
    let origin: String
    var problems: [Problem] = []

    init(_ code: Int, _ message: String, origin: String = "") {
        self.code = Int32(code)
        self.message = message
        self.origin = origin
    }

    /// Maps a core error to its status code, keeping the core's message.
    init(_ error: AmberError) {
        let message = error.description
        switch error {
        case .invalidModel(let problems):
            self.init(AMBER_E_INVALID_MODEL, message, origin: problems.first?.place ?? "")
            self.problems = problems.map { Problem(place: $0.place, message: $0.message) }
        case .invalidJSON(let path, _): self.init(AMBER_E_INVALID_JSON, message, origin: path)
        case .unknownEntity(let name, _): self.init(AMBER_E_NOT_FOUND, message, origin: name)
        case .unknownTransformer(let name, _): self.init(AMBER_E_NOT_FOUND, message, origin: name)
        case .unknownAttribute(let entity, let name, _): self.init(AMBER_E_NOT_FOUND, message, origin: "\(entity).\(name)")
        case .unknownRelationship(let entity, let name, _): self.init(AMBER_E_NOT_FOUND, message, origin: "\(entity).\(name)")
        case .unknownFetchedProperty(let entity, let name, _): self.init(AMBER_E_NOT_FOUND, message, origin: "\(entity).\(name)")
        case .invalidValue(let place, _, _): self.init(AMBER_E_INVALID_VALUE, message, origin: place)
        case .foreignAttribute(let attribute, _): self.init(AMBER_E_NOT_FOUND, message, origin: attribute)
        case .foreignRelationship(let relationship, _): self.init(AMBER_E_NOT_FOUND, message, origin: relationship)
        case .invalidPredicate(let position, _): self.init(AMBER_E_INVALID_PREDICATE, message, origin: "position \(position)")
        case .unknownKeyPath(let position, _): self.init(AMBER_E_NOT_FOUND, message, origin: "position \(position)")
        case .invalidSubstitution(let variable, _): self.init(AMBER_E_INVALID_PREDICATE, message, origin: "$\(variable)")
        case .unknownTemplate(let name, _): self.init(AMBER_E_NOT_FOUND, message, origin: name)
        case .saveFailed(let problems):
            self.init(AMBER_E_SAVE_FAILED, message, origin: problems.first?.place ?? "")
            self.problems = problems.map {
                Problem(objectURI: $0.objectID?.uriRepresentation.absoluteString ?? "", place: $0.place, rule: $0.rule.rawValue,
                        message: $0.message)
            }
        case .modelMismatch(let store, _): self.init(AMBER_E_MODEL_MISMATCH, message, origin: store)
        case .notAStore(let path, _): self.init(AMBER_E_NOT_A_STORE, message, origin: path)
        case .migrationFailed(let store, _): self.init(AMBER_E_MIGRATION_FAILED, message, origin: store)
        case .invalidXcodeModel(let file, _, _, _): self.init(AMBER_E_INVALID_MODEL, message, origin: file)
        case .objectNotFound(let id): self.init(AMBER_E_NOT_FOUND, message, origin: id.description)
        case .objectUnavailable(let id, _): self.init(AMBER_E_UNAVAILABLE, message, origin: id.description)
        case .sqlite: self.init(AMBER_E_SQLITE, message)
        case .invalidDeclaration(let place, _): self.init(AMBER_E_INVALID_DECLARATION, message, origin: place)
        case .duplicateName(_, let name, _, _): self.init(AMBER_E_DUPLICATE, message, origin: name)
        case .transformerFailed(_, let transformer, _, _): self.init(AMBER_E_TRANSFORMER, message, origin: transformer)
        case .pluginRefused(let path, _): self.init(AMBER_E_PLUGIN_REFUSED, message, origin: path)
        case .busy(let path, _): self.init(AMBER_E_BUSY, message, origin: path)
        case .fileExists(let path): self.init(AMBER_E_EXISTS, message, origin: path)
        case .computationFailed(_, let function, _, _): self.init(AMBER_E_TRANSFORMER, message, origin: function)
        case .observerFailed(let event, _): self.init(AMBER_E_OBSERVER, message, origin: event)
        case .hookFailed(_, let hook, _): self.init(AMBER_E_HOOK, message, origin: hook)
        case .invalidStoreURL(_, let part, _): self.init(AMBER_E_INVALID_URL, message, origin: part)
        case .unsupported(_, let capability): self.init(AMBER_E_UNSUPPORTED, message, origin: capability)
        case .historyUnavailable(let store, _): self.init(AMBER_E_HISTORY, message, origin: store)
        case .server(_, let state, _): self.init(AMBER_E_SERVER, message, origin: state)
        case .storageFailed(let path, _): self.init(AMBER_E_STORAGE, message, origin: path)
        }
    }

    /// The message, as a failure inside a callback reports it.
    var description: String { message }

    static func null(_ parameter: String) -> CAPIError {
        CAPIError(AMBER_E_NULL_ARGUMENT, "\(parameter) is NULL", origin: parameter)
    }
}

/// Runs the body of an exported function: every error becomes a status
/// code and the thread's last error; success returns AMBER_OK.
@inline(__always)
func api(_ body: () throws(CAPIError) -> Void) -> amber_status {
    do {
        try body()
        return amber_status(AMBER_OK)
    } catch {
        LastError.set(error)
        return error.code
    }
}

/// Converts a core error thrown by `body` into a C API error.
@inline(__always)
func core<T>(_ body: () throws(AmberError) -> T) throws(CAPIError) -> T {
    do {
        return try body()
    } catch {
        throw CAPIError(error)
    }
}

/// The last error of each thread, as C strings that stay valid until the next failure.
enum LastError {
    final class Slot {
        var code: Int32 = 0
        var message: UnsafeMutablePointer<CChar> = strdup("")
        var origin: UnsafeMutablePointer<CChar> = strdup("")
        /// What a C callback said with amber_transformer_error or amber_logic_error during the current call.
        var callbackMessage: String?

        /// The problems the error lists: a buffer and strings the slot owns,
        /// so the pointers amber_last_error_problem returns stay put.
        private(set) var problems = UnsafeMutableBufferPointer<amber_problem>(start: nil, count: 0)

        func replace(code: Int32, message: String, origin: String, problems: [CAPIError.Problem] = []) {
            free(self.message)
            free(self.origin)
            freeProblems()
            self.code = code
            self.message = strdup(message)
            self.origin = strdup(origin)
            guard !problems.isEmpty else { return }
            self.problems = .allocate(capacity: problems.count)
            _ = self.problems.initialize(from: problems.lazy.map {
                amber_problem(object_uri: strdup($0.objectURI), place: strdup($0.place), rule: strdup($0.rule), message: strdup($0.message))
            })
        }

        private func freeProblems() {
            for problem in problems {
                for string in [problem.object_uri, problem.place, problem.rule, problem.message] { free(UnsafeMutablePointer(mutating: string)) }
            }
            problems.deallocate()
            problems = UnsafeMutableBufferPointer(start: nil, count: 0)
        }

        deinit {
            free(message)
            free(origin)
            freeProblems()
        }
    }

    /// One key for the process; each thread's slot is released when the thread exits.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<Slot>.fromOpaque(pointer).release() }
        }
        return key
    }()

    static var current: Slot {
        if let pointer = pthread_getspecific(key) { return Unmanaged<Slot>.fromOpaque(pointer).takeUnretainedValue() }
        let slot = Slot()
        pthread_setspecific(key, Unmanaged.passRetained(slot).toOpaque())
        return slot
    }

    static func set(_ error: CAPIError) {
        current.replace(code: error.code, message: error.message, origin: error.origin, problems: error.problems)
    }
}

@c @implementation
public func amber_last_error_code() -> amber_status {
    LastError.current.code
}

@c @implementation
public func amber_last_error_message() -> UnsafePointer<CChar>? {
    UnsafePointer(LastError.current.message)
}

@c @implementation
public func amber_last_error_origin() -> UnsafePointer<CChar>? {
    UnsafePointer(LastError.current.origin)
}

@c @implementation
public func amber_last_error_problem_count() -> Int {
    LastError.current.problems.count
}

@c @implementation
public func amber_last_error_problem(_ index: Int) -> UnsafePointer<amber_problem>? {
    let problems = LastError.current.problems
    guard index >= 0, index < problems.count, let first = problems.baseAddress else { return nil }
    return UnsafePointer(first + index)
}

@c @implementation
public func amber_clear_error() {
    LastError.current.replace(code: 0, message: "", origin: "")
}

@c @implementation
public func amber_free(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}
