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
/// `TRUEPREDICATE` and `FALSEPREDICATE`; `SELF`; and substitution of `%@`
/// (a value) and `%K` (an attribute name) from the arguments, in order.
///
/// Arguments are kept as values and bound as SQL parameters when the
/// predicate is compiled for an entity: no value is ever pasted into SQL text.
public struct FetchPredicate: Sendable, CustomStringConvertible {
    /// The text this predicate was parsed from.
    public let format: String
    package let root: PredicateNode

    /// Parses `format`, substituting `arguments` for `%@` and `%K` in order.
    ///
    /// - Throws: ``AmberError/invalidPredicate(position:message:)`` with the
    ///   1-based character position of the problem; too few or too many
    ///   arguments are errors too.
    public init(_ format: String, arguments: [Value] = []) throws(AmberError) {
        self.format = format
        var parser = PredicateParser(format, arguments: arguments)
        self.root = try parser.parse()
    }

    /// Parses `format` with variadic arguments: `try FetchPredicate("price < %@", 10)`.
    public init(_ format: String, _ arguments: Value...) throws(AmberError) {
        try self.init(format, arguments: arguments)
    }

    public var description: String { format }

    /// The key paths the predicate compares, lists' members included.
    package var keyPaths: [String] {
        var paths: [String] = []
        // Work lists, not recursion: the tree is as deep as the text nests.
        var nodes = [root], operands: [Operand] = []
        while let node = nodes.popLast() {
            switch node {
            case .constant: break
            case .not(let inner): nodes.append(inner)
            case .and(let a, let b), .or(let a, let b): nodes += [b, a]
            case .comparison(let comparison): operands += [comparison.lhs, comparison.rhs]
            }
        }
        while let operand = operands.popLast() {
            switch operand {
            case .keyPath(let path, _): paths.append(path)
            case .list(let members, _): operands += members
            case .this, .value: break
            }
        }
        return paths
    }
}

/// The syntax tree of a predicate.
package indirect enum PredicateNode: Sendable {
    case constant(Bool)
    case not(PredicateNode)
    case and(PredicateNode, PredicateNode)
    case or(PredicateNode, PredicateNode)
    case comparison(Comparison)
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
}

package enum Operand: Sendable {
    case keyPath(String, position: Int)
    case this(position: Int)
    case value(Value, position: Int)
    case list([Operand], position: Int)

    package var position: Int {
        switch self {
        case .keyPath(_, let p), .this(let p), .value(_, let p), .list(_, let p): p
        }
    }
}
