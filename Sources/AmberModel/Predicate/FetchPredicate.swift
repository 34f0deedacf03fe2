import AmberTransformers
import AmberValues

/// A parsed predicate in Core Data's predicate format syntax.
///
/// Supported: comparisons `== = != <> < <= > >=`; key paths through to-one
/// relationships (`author.name`); `ANY`/`SOME`, `ALL` and `NONE` before a key
/// path through a to-many relationship (`ANY books.price > 10`); the
/// collection operators `@count`, `@sum`, `@avg`, `@min` and `@max`
/// (`books.@count > 3`, `books.@sum.price`); objects compared by object ID
/// (`author == %@`, `SELF IN %@`; an ID may also come as its URI text, which
/// is how C and Python pass a list of objects); string operators
/// `BEGINSWITH ENDSWITH CONTAINS LIKE MATCHES` with the modifiers `[c]`
/// (case-insensitive), `[d]` (diacritic-insensitive) and `[cd]`; `IN` a list;
/// `BETWEEN {low, high}`; `AND OR NOT` (also `&& || !`); `nil`/`NULL`;
/// `TRUEPREDICATE` and `FALSEPREDICATE`; `SELF`; substitution of `%@`
/// (a value) and `%K` (an attribute name) from the arguments, in order;
/// `$VARIABLES`, named values given later with ``substituting(_:)`` (as a
/// fetch request template's are); and `SUBQUERY(books, $b, $b.price > 10
/// AND $b.title BEGINSWITH 'A').@count`, the members of a to-many key path
/// that match a predicate over them, counted.
///
/// Arguments are kept as values and bound as SQL parameters when the
/// predicate is compiled for an entity: no value is ever pasted into SQL text.
public struct FetchPredicate: Sendable, CustomStringConvertible {
    /// The text this predicate was parsed from.
    public let format: String
    package let root: PredicateNode
    /// Every `$VARIABLE` with its position, in text order (recorded by the parser).
    private let variableUses: [(name: String, position: Int)]

    /// The names of the predicate's `$VARIABLES` (without the `$`), each
    /// once, in the order they first appear.
    public var variables: [String] {
        var seen: Set<String> = []
        return variableUses.compactMap { seen.insert($0.name).inserted ? $0.name : nil }
    }

    /// The first `$VARIABLE`'s name, if the predicate has any (what a fetch checks, without listing them).
    package var firstVariable: String? { variableUses.first?.name }

    /// Parses `format`, substituting `arguments` for `%@` and `%K` in order.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidPredicate(position:message:)`` with the
    ///   1-based character position of the problem; too few or too many
    ///   arguments are errors too.
    public init(_ format: String, arguments: [Value] = []) throws(AmberError) {
        self.format = format
        var parser = PredicateParser(format, arguments: arguments)
        self.root = try parser.parse()
        self.variableUses = parser.variables
    }

    /// Parses `format` with variadic arguments: `try FetchPredicate("price < %@", 10)`.
    public init(_ format: String, _ arguments: Value...) throws(AmberError) {
        try self.init(format, arguments: arguments)
    }

    public var description: String { format }

    /// The predicate with each `$VARIABLE` replaced by its value in
    /// `values` (keyed by name, without the `$`). A value is compared as a
    /// `%@` argument would be: an array or a list of object IDs after `IN`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidSubstitution(variable:message:)`` for a
    ///   variable with no value (with its position) and for a value no
    ///   variable takes (with the nearest variable's name).
    public func substituting(_ values: [String: Value]) throws(AmberError) -> FetchPredicate {
        let uses = variableUses
        // Extra values first: a misspelled name is both, and its message has the nearest name.
        let names = Set(uses.map(\.name))
        if let extra = values.keys.sorted().first(where: { !names.contains($0) }) {
            let known = variables.map { "$" + $0 }
            throw .invalidSubstitution(variable: extra, message: "not a variable of \"\(format)\" (" + (known.isEmpty ? "it has none" : "it has \(known.joined(separator: ", "))")
                + ")" + AmberError.hint(nearestName(to: extra, in: variables).map { "$" + $0 }))
        }
        if let missing = uses.first(where: { values[$0.name] == nil }) {
            throw .invalidSubstitution(variable: missing.name, message: "no value given for the variable at position \(missing.position) of \"\(format)\"")
        }
        guard !uses.isEmpty else { return self }
        return FetchPredicate(format: format, root: root.substituting(values))
    }

    /// A substituted predicate: its variables are values now, but for `remaining`.
    private init(format: String, root: PredicateNode, remaining: [(name: String, position: Int)] = []) {
        self.format = format
        self.root = root
        self.variableUses = remaining
    }

    /// The predicate with the variables `values` names replaced by their
    /// values and the others left as variables (what a binding knows
    /// before the rest is known).
    package func filling(_ values: [String: Value]) -> FetchPredicate {
        guard !values.isEmpty else { return self }
        return FetchPredicate(format: format, root: root.substituting(values), remaining: variableUses.filter { values[$0.name] == nil })
    }

    /// A substitution of `values` into `predicate`, which may be nil (`owner`,
    /// "the template", names what has no predicate in the error for a value).
    package static func substituting(_ values: [String: Value], into predicate: FetchPredicate?, owner: String) throws(AmberError) -> FetchPredicate? {
        if let predicate { return try predicate.substituting(values) }
        if let extra = values.keys.sorted().first {
            throw .invalidSubstitution(variable: extra, message: "not a variable (\(owner) has no predicate)")
        }
        return nil
    }

    /// The key paths the predicate compares, lists' members included.
    package var keyPaths: [String] { keyPathUses.map(\.path) }

    /// The key paths with their positions; of a subquery, what it reads
    /// from the object tested: its collection.
    package var keyPathUses: [(path: String, position: Int)] {
        operands.compactMap { operand in
            switch operand {
            case .keyPath(let path, let position): (path, position)
            case .subquery(let subquery, let position): (subquery.collection, position)
            default: nil
            }
        }
    }

    /// Whether a subquery reads its members' key paths, which ``keyPaths`` does not list.
    package var hasSubquery: Bool {
        operands.contains { if case .subquery = $0 { true } else { false } }
    }

    /// Every operand but lists (their members instead), in text order.
    private var operands: [Operand] {
        var found: [Operand] = []
        // Work lists, not recursion: the tree is as deep as the text nests.
        var nodes = [root], pending: [Operand] = []
        while let node = nodes.popLast() {
            switch node {
            case .constant: break
            case .not(let inner): nodes.append(inner)
            case .and(let a, let b), .or(let a, let b): nodes += [b, a]
            case .comparison(let comparison):
                pending = [comparison.rhs, comparison.lhs]
                while let operand = pending.popLast() {
                    switch operand {
                    case .list(let members, _): pending += members.reversed()
                    default: found.append(operand)
                    }
                }
            }
        }
        return found
    }
}

/// The syntax tree of a predicate.
package indirect enum PredicateNode: Sendable {
    case constant(Bool)
    case not(PredicateNode)
    case and(PredicateNode, PredicateNode)
    case or(PredicateNode, PredicateNode)
    case comparison(Comparison)

    /// The tree with each variable operand that `values` names replaced by its value.
    func substituting(_ values: [String: Value]) -> PredicateNode {
        // `a AND b AND c …` is a left-deep chain as long as the text: walk its spine in a loop
        // and recurse only into the right-hand sides, whose depth the parser bounds by nesting.
        var spine: [(isAnd: Bool, right: PredicateNode)] = []
        var node = self
        while true {
            if case .and(let a, let b) = node {
                spine.append((true, b))
                node = a
            } else if case .or(let a, let b) = node {
                spine.append((false, b))
                node = a
            } else {
                break
            }
        }
        switch node {
        case .constant, .and, .or: break
        case .not(let inner): node = .not(inner.substituting(values))
        case .comparison(var comparison):
            comparison.lhs = comparison.lhs.substituting(values)
            comparison.rhs = comparison.rhs.substituting(values)
            node = .comparison(comparison)
        }
        for (isAnd, right) in spine.reversed() {
            node = isAnd ? .and(node, right.substituting(values)) : .or(node, right.substituting(values))
        }
        return node
    }
}

/// `[quantifier] lhs op[options] rhs`, with the position of the operator for errors.
package struct Comparison: Sendable {
    package var lhs: Operand
    package var op: ComparisonOperator
    package var options: ComparisonOptions
    package var rhs: Operand
    package var position: Int
    /// `ANY`/`SOME`, `ALL` or `NONE` before a key path through a to-many relationship.
    package var quantifier: Quantifier?
}

/// How a comparison over a to-many key path combines its members' results.
package enum Quantifier: String, Sendable {
    case any = "ANY", all = "ALL", none = "NONE"
}

package enum ComparisonOperator: String, Sendable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE", matches = "MATCHES"
    case `in` = "IN", between = "BETWEEN"

    /// The operator with its operands swapped (`3 < x` is `x > 3`); nil where order matters otherwise.
    package var swapped: ComparisonOperator? {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: nil
        }
    }
}

/// The `[cd]` modifiers.
package struct ComparisonOptions: OptionSet, Sendable {
    package let rawValue: Int64
    package init(rawValue: Int64) { self.rawValue = rawValue }
    package static let caseInsensitive = ComparisonOptions(rawValue: 1)
    package static let diacriticInsensitive = ComparisonOptions(rawValue: 2)

    /// The modifiers as written after an operator: `[c]`, `[d]`, `[cd]`, or nothing.
    package var modifier: String {
        isEmpty ? "" : "[" + (contains(.caseInsensitive) ? "c" : "") + (contains(.diacriticInsensitive) ? "d" : "") + "]"
    }
}

package enum Operand: Sendable {
    case keyPath(String, position: Int)
    case this(position: Int)
    case value(Value, position: Int)
    case list([Operand], position: Int)
    /// `$NAME`: a value given when the predicate is substituted.
    case variable(String, position: Int)
    /// `SUBQUERY(collection, $x, predicate).@count`: how many members of a
    /// to-many key path match a predicate over them.
    indirect case subquery(Subquery, position: Int)

    package var position: Int {
        switch self {
        case .keyPath(_, let p), .this(let p), .value(_, let p), .list(_, let p), .variable(_, let p), .subquery(_, let p): p
        }
    }

    func substituting(_ values: [String: Value]) -> Operand {
        switch self {
        // A variable without a value stays one (``FetchPredicate/filling(_:)``; a full substitution has them all).
        case .variable(let name, let position): values[name].map { .value($0, position: position) } ?? self
        case .list(let members, let position): .list(members.map { $0.substituting(values) }, position: position)
        case .subquery(let subquery, let position):
            .subquery(Subquery(collection: subquery.collection, variable: subquery.variable,
                               predicate: subquery.predicate.substituting(values)), position: position)
        case .keyPath, .this, .value: self
        }
    }
}

/// `SUBQUERY(books, $b, $b.price > 10).@count`: the members of the to-many
/// key path `collection` (through to-one relationships, from the object
/// tested) that `predicate` matches, counted. Inside, `$b` is the member
/// (`SELF` of the inner predicate) and `$b.price` its key path `price`.
package struct Subquery: Sendable {
    /// The key path to the members, from the object tested.
    package var collection: String
    /// The variable naming the member (without the `$`), for messages.
    package var variable: String
    /// The predicate over each member: its key paths start at the member.
    package var predicate: PredicateNode
}
