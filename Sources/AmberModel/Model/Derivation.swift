import AmberValues

/// How a derived attribute's value follows from its object: computed by the
/// store when a save writes the rows it depends on, never set by callers.
///
/// The expressions:
/// - a key path to a stored attribute of the object, or of one reached
///   through to-one relationships: `author.name`;
/// - `canonical:(key path)`: the string folded for case and diacritics, as
///   `CONTAINS[cd]` compares (search it with `CONTAINS[cd]`, which then folds
///   only the searched-for text); `lowercase:(key path)`,
///   `uppercase:(key path)`: Swift's `lowercased()` and `uppercased()`;
/// - `now()`: the time of the save that last wrote the object;
/// - a collection operator over a to-many relationship of the object:
///   `books.@count`, `books.@sum.price`, `@avg`, `@min`, `@max`.
public struct Derivation: Sendable, Hashable, CustomStringConvertible {
    /// The string functions.
    public enum Function: String, Sendable, CaseIterable {
        case canonical, lowercase, uppercase
    }

    /// The collection operators.
    public enum Operation: String, Sendable, CaseIterable {
        case count = "@count", sum = "@sum", avg = "@avg", min = "@min", max = "@max"
    }

    /// What the expression computes.
    public enum Form: Sendable, Hashable {
        /// The value at a key path.
        case value(keyPath: [String])
        /// A string function of the string at a key path.
        case function(Function, keyPath: [String])
        /// The time of the save.
        case now
        /// A collection operator over a to-many relationship (`key` is nil for `@count`).
        case aggregate(relationship: String, operation: Operation, key: String?)
    }

    /// The expression as written.
    public let expression: String
    /// What it computes.
    public let form: Form
    /// Where each key-path component starts in `expression` (1-based), for errors.
    let positions: [Int]

    public var description: String { expression }

    /// A problem in an expression, at a 1-based character position.
    struct Problem: Error {
        let position: Int
        let message: String
    }

    /// Parses `expression`; a syntax error names its position.
    init(parsing expression: String) throws(Problem) {
        self.expression = expression
        let characters = Array(expression)
        guard let first = characters.firstIndex(where: { !$0.isWhitespace }),
              let last = characters.lastIndex(where: { !$0.isWhitespace })
        else { throw Problem(position: 1, message: "an empty expression") }
        let text = String(characters[first...last])
        if text == "now()" {
            (form, positions) = (.now, [])
            return
        }
        if let colon = text.firstIndex(of: ":") {
            let name = String(text[..<colon])
            let offset = first + name.count + 1
            guard let function = Function(rawValue: name) else {
                throw Problem(position: first + 1, message: "unknown function \(name):; expected canonical:, lowercase: or uppercase:"
                    + AmberError.hint(nearestName(to: name, in: Function.allCases.map(\.rawValue))))
            }
            let argument = text[text.index(after: colon)...]
            guard argument.hasPrefix("("), argument.hasSuffix(")"), argument.count >= 2 else {
                throw Problem(position: offset + 1, message: "\(name): takes a key path in parentheses, as in \(name):(title)")
            }
            let path = try Self.keyPath(String(argument.dropFirst().dropLast()), at: offset + 2)
            guard !path.names.contains(where: { $0.hasPrefix("@") }) else {
                throw Problem(position: offset + 2, message: "\(name): takes a key path to a string, not a collection operator")
            }
            (form, positions) = (.function(function, keyPath: path.names), path.positions)
            return
        }
        let path = try Self.keyPath(text, at: first + 1)
        positions = path.positions
        guard let at = path.names.firstIndex(where: { $0.hasPrefix("@") }) else {
            form = .value(keyPath: path.names)
            return
        }
        guard at == 1 else {
            throw Problem(position: path.positions[at], message: "a collection operator follows a to-many relationship of the "
                + "entity itself, as in books.@count")
        }
        guard let operation = Operation(rawValue: path.names[1]) else {
            throw Problem(position: path.positions[1], message: "unknown collection operator \(path.names[1])"
                + AmberError.hint(nearestName(to: path.names[1], in: Operation.allCases.map(\.rawValue))))
        }
        if operation == .count {
            guard path.names.count == 2 else { throw Problem(position: path.positions[2], message: "nothing may follow @count") }
            form = .aggregate(relationship: path.names[0], operation: operation, key: nil)
        } else {
            guard path.names.count == 3 else {
                let position = path.names.count > 3 ? path.positions[3] : path.positions[1]
                throw Problem(position: position, message: "\(operation.rawValue) takes one attribute of the members, as in "
                    + "\(path.names[0]).\(operation.rawValue).price")
            }
            form = .aggregate(relationship: path.names[0], operation: operation, key: path.names[2])
        }
    }

    /// Splits a key path into names (identifiers, or `@` and an identifier), each with its position.
    private static func keyPath(_ text: String, at start: Int) throws(Problem) -> (names: [String], positions: [Int]) {
        var names: [String] = [], positions: [Int] = []
        var position = start
        for part in text.split(separator: ".", omittingEmptySubsequences: false) {
            let name = String(part)
            let bare = name.hasPrefix("@") ? String(name.dropFirst()) : name
            guard let head = bare.first, head.isLetter || head == "_",
                  bare.allSatisfy({ ($0.isLetter || $0.isNumber || $0 == "_") && $0.isASCII })
            else {
                throw Problem(position: position, message: name.isEmpty ? "a key path has an empty name here"
                    : "\"\(name)\" is not a name (letters, digits and underscores, not starting with a digit)")
            }
            names.append(name)
            positions.append(position)
            position += name.count + 1
        }
        return (names, positions)
    }
}

// MARK: - Checking against the bound model

extension Model {
    /// Every derived attribute's problems: names along its key path, the
    /// types at its end, and its own type against what it computes.
    /// Inherited attributes are checked where they are declared.
    func derivationProblems() -> [ModelProblem] {
        var problems: [ModelProblem] = []
        for (entity, attribute, derivation) in declaredDerivations {
            do throws(Derivation.Problem) {
                try check(derivation, of: attribute, in: entity)
            } catch {
                problems.append(ModelProblem(place: attribute.description,
                                             message: "derived expression \"\(derivation)\", at \(error.position): \(error.message)"))
            }
        }
        return problems
    }

    /// Every derived attribute with the entity that declares it (not those
    /// that inherit it, whose rows share the declaring entity's table).
    package var declaredDerivations: [(entity: Entity, attribute: Attribute, derivation: Derivation)] {
        entities.flatMap { entity in
            entity.attributes.compactMap { attribute in
                guard let derivation = attribute.derivation,
                      !(parent(of: entity)?.attributes.contains { $0.name == attribute.name } ?? false)
                else { return nil }
                return (entity, attribute, derivation)
            }
        }
    }

    /// The attributes a derivation reads, first to last hop: the to-one
    /// relationships it follows and the attribute at its end.
    package func source(of derivation: Derivation, in entity: Entity) -> (hops: [Relationship], attribute: Attribute)? {
        let path: [String]
        switch derivation.form {
        case .value(let keyPath), .function(_, let keyPath): path = keyPath
        case .now, .aggregate: return nil
        }
        var current = entity, hops: [Relationship] = []
        for name in path.dropLast() {
            guard let relationship = current.relationships.first(where: { $0.name == name }), !relationship.isToMany else { return nil }
            hops.append(relationship)
            current = destination(of: relationship)
        }
        return current.attributes.first { $0.name == path.last }.map { (hops, $0) }
    }

    private func check(_ derivation: Derivation, of attribute: Attribute, in entity: Entity) throws(Derivation.Problem) {
        let type = attribute.type
        let integers: Set<AttributeType> = [.integer16, .integer32, .integer64]
        func expect(_ allowed: Set<AttributeType>, _ what: String) throws(Derivation.Problem) {
            guard allowed.contains(type) else {
                throw Derivation.Problem(position: 1, message: "computes \(what), so \(attribute) must be \(allowed.map(\.rawValue).sorted().joined(separator: " or ")), not \(type)")
            }
        }
        func stored(_ source: Attribute, at position: Int) throws(Derivation.Problem) {
            if source.isTransient { throw Derivation.Problem(position: position, message: "\(source) is transient; a derived value reads stored attributes") }
            if source.codec != nil { throw Derivation.Problem(position: position, message: "\(source) is transformed; a derived value reads plain attributes") }
            if source.derivation != nil { throw Derivation.Problem(position: position, message: "\(source) is derived itself; derive from its sources instead") }
        }
        switch derivation.form {
        case .now:
            try expect([.date], "a date")
        case .value(let path), .function(_, let path):
            var current = entity
            for (index, name) in path.enumerated() {
                let position = derivation.positions[index]
                if let relationship = current.relationships.first(where: { $0.name == name }) {
                    guard !relationship.isToMany else {
                        throw Derivation.Problem(position: position, message: "\(relationship) is to-many; follow it with a collection operator "
                            + "(\(name).@count) on \(entity.name) itself")
                    }
                    guard index < path.count - 1 else {
                        throw Derivation.Problem(position: position, message: "\(relationship) is a relationship; the key path must end at an attribute")
                    }
                    current = destination(of: relationship)
                    continue
                }
                guard let source = current.attributes.first(where: { $0.name == name }) else {
                    throw Derivation.Problem(position: position, message: "\(current.name).\(name): no such attribute or relationship"
                        + AmberError.hint(nearestName(to: name, in: current.attributes.map(\.name) + current.relationships.map(\.name))))
                }
                guard index == path.count - 1 else {
                    throw Derivation.Problem(position: position, message: "\(source) is an attribute; a key path cannot go on from it")
                }
                try stored(source, at: position)
                if case .function(let function, _) = derivation.form {
                    guard source.type == .string else {
                        throw Derivation.Problem(position: position, message: "\(function.rawValue): needs a string; \(source) is \(source.type)")
                    }
                    try expect([.string], "a string")
                } else {
                    try expect([source.type], "\(source)'s value")
                }
            }
        case .aggregate(let name, let operation, let key):
            guard let relationship = entity.relationships.first(where: { $0.name == name }), relationship.isToMany else {
                let known = entity.relationships.filter(\.isToMany).map(\.name)
                throw Derivation.Problem(position: 1, message: "\(entity.name).\(name): no such to-many relationship" + AmberError.hint(nearestName(to: name, in: known)))
            }
            // Counts and integer sums are 64-bit: a narrower column could not hold every result exactly.
            guard let key else { return try expect([.integer64], "a count") }
            let members = destination(of: relationship)
            let position = derivation.positions[2]
            guard let source = members.attributes.first(where: { $0.name == key }) else {
                throw Derivation.Problem(position: position, message: "\(members.name).\(key): no such attribute"
                    + AmberError.hint(nearestName(to: key, in: members.attributes.map(\.name))))
            }
            try stored(source, at: position)
            let numbers: Set<AttributeType> = integers.union([.double, .float])
            let ordered = operation == .min || operation == .max
            guard numbers.contains(source.type) || (ordered && source.type == .date) else {
                throw Derivation.Problem(position: position, message: "\(operation.rawValue) needs numbers\(ordered ? " or dates" : ""); \(source) is \(source.type)")
            }
            switch operation {
            // SQLite computes sums and means as 64-bit integers or doubles: a float column could not hold every result exactly.
            case .sum: try expect(integers.contains(source.type) ? [.integer64, .double] : [.double], "a sum of \(source)")
            case .avg: try expect([.double], "an average")
            default: try expect([source.type], "\(source)'s \(operation == .min ? "smallest" : "largest") value")
            }
        }
    }
}
