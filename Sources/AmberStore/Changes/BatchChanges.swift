import AmberModel
import AmberValues
import Foundation

/// The new value a batch update gives an attribute of each object it
/// changes: a constant, another attribute of the same object, or simple
/// arithmetic on them. Literals are constants, so
/// `["pages": .attribute("pages") + 10, "isRead": true]` reads as it does in SQL.
public indirect enum BatchValue: Sendable, Equatable, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    /// A constant, checked against the attribute as a set would check it.
    case value(Value)
    /// The value of another attribute of the same object (before the update).
    case attribute(String)
    /// The sum of two numbers.
    case add(BatchValue, BatchValue)
    /// The difference of two numbers.
    case subtract(BatchValue, BatchValue)
    /// The product of two numbers.
    case multiply(BatchValue, BatchValue)

    public init(integerLiteral value: Int64) { self = .value(.int(value)) }
    public init(floatLiteral value: Double) { self = .value(.double(value)) }
    public init(stringLiteral value: String) { self = .value(.string(value)) }
    public init(booleanLiteral value: Bool) { self = .value(.bool(value)) }
    public init(nilLiteral: ()) { self = .value(.null) }

    public static func + (lhs: BatchValue, rhs: BatchValue) -> BatchValue { .add(lhs, rhs) }
    public static func - (lhs: BatchValue, rhs: BatchValue) -> BatchValue { .subtract(lhs, rhs) }
    public static func * (lhs: BatchValue, rhs: BatchValue) -> BatchValue { .multiply(lhs, rhs) }
}

/// What a batch change did: the objects it changed or deleted, by ID, and
/// the objects of other entities whose links to deleted objects it cleared.
public struct BatchResult: Sendable {
    /// The objects the batch updated or deleted, in the request's order
    /// (primary-key order when it has no sort keys).
    public let objectIDs: [ObjectID]
    /// For a batch delete: the objects whose to-one link to a deleted object
    /// was cleared by a nullify rule (each is updated, and listed once).
    public let nullified: [ObjectID]

    package init(objectIDs: [ObjectID], nullified: [ObjectID]) {
        (self.objectIDs, self.nullified) = (objectIDs, nullified)
    }
}

/// One assignment of a batch update, resolved against the model: what a
/// store compiles.
package struct BatchAssignment: Sendable {
    /// A resolved new value.
    package indirect enum Term: Sendable {
        /// A constant, already coerced to the attribute's type.
        case constant(Value)
        /// A stored attribute of the same row.
        case column(Attribute)
        case add(Term, Term), subtract(Term, Term), multiply(Term, Term)

        /// The attributes the term reads.
        package var columns: [Attribute] {
            switch self {
            case .constant: []
            case .column(let attribute): [attribute]
            case .add(let a, let b), .subtract(let a, let b), .multiply(let a, let b): a.columns + b.columns
            }
        }
    }

    package let attribute: Attribute
    package let term: Term

    /// Whether the value is computed per row (its result is checked per row).
    package var isComputed: Bool {
        if case .constant = term { return false }
        return true
    }

    /// The types arithmetic is exact for in every store: integers (checked
    /// for overflow), Doubles (IEEE as in Swift) and decimals (exact, or refused).
    private static let arithmeticTypes: Set<AttributeType> = [.integer16, .integer32, .integer64, .double, .decimal]

    /// Resolves `assignments` on `entity`, refusing what a store cannot do
    /// exactly, naming the attribute: an unknown name, one set twice, a
    /// transient, derived, computed or transformed attribute, a constant a
    /// set would refuse (its type, a rule, nil for a required attribute), and
    /// arithmetic on types it is not exact for or on operands of another type.
    package static func resolve(_ assignments: [(key: String, value: BatchValue)], on entity: Entity) throws(AmberError) -> [BatchAssignment] {
        guard !assignments.isEmpty else {
            throw .invalidValue(place: entity.name, expected: "at least one attribute to set", given: "none")
        }
        var resolved: [BatchAssignment] = [], seen = Set<String>()
        for (key, value) in assignments {
            let attribute = try entity.attribute(named: key)
            guard seen.insert(key).inserted else { throw refuse(attribute, "it is set twice in one batch update") }
            if let why = unsettable(attribute) { throw refuse(attribute, why) }
            resolved.append(BatchAssignment(attribute: attribute, term: try term(value, for: attribute, on: entity)))
        }
        return resolved
    }

    /// Why a batch update cannot set `attribute`, if it cannot.
    private static func unsettable(_ attribute: Attribute) -> String? {
        if attribute.isTransient { return "it is transient (not stored)" }
        if attribute.derivation != nil { return "it is derived (the store computes it)" }
        if attribute.computation != nil { return "it is computed (not stored)" }
        if attribute.codec != nil || [.transformable, .undefined, .objectID].contains(attribute.type) {
            return "its values pass through transformers; set them through a context"
        }
        return nil
    }

    private static func refuse(_ attribute: Attribute, _ why: String) -> AmberError {
        .invalidValue(place: attribute.description, expected: "an attribute a batch update can set", given: why)
    }

    private static func term(_ value: BatchValue, for target: Attribute, on entity: Entity) throws(AmberError) -> Term {
        if case .value(let constant) = value {
            let checked = try target.check(constant)
            if checked == .null, !target.isOptional { throw refuse(target, "it is required, and the batch sets it to nil") }
            if checked != .null, let (_, message) = target.violations(of: checked).first {
                throw .invalidValue(place: target.description, expected: "a value its rules allow", given: message)
            }
            return .constant(checked)
        }
        if case .attribute(let name) = value {
            let source = try entity.attribute(named: name)
            if let why = unsettable(source) { throw refuse(source, "a batch update reads only stored attributes, and \(why)") }
            // An integer goes into any number (each row checked to fit); other types only into their own.
            guard source.type == target.type || (source.type.integerRange != nil && arithmeticTypes.contains(target.type)) else {
                throw refuse(target, "\(source) is \(source.type.coreDataName) and it is \(target.type.coreDataName): "
                    + "a batch update copies an attribute of the same type, or an integer into a number")
            }
            return .column(source)
        }
        guard arithmeticTypes.contains(target.type) else {
            throw refuse(target, "its type is \(target.type.coreDataName): a batch update sets it to a constant or another "
                + "attribute of its type; arithmetic is exact for integers, Doubles and decimals only")
        }
        return try operand(value, for: target, on: entity)
    }

    /// An operand of arithmetic (or a copied attribute) for `target`.
    private static func operand(_ value: BatchValue, for target: Attribute, on entity: Entity) throws(AmberError) -> Term {
        switch value {
        case .value(let constant):
            guard constant != .null else { throw refuse(target, "nil in arithmetic") }
            return .constant(try target.check(constant))
        case .attribute(let name):
            let source = try entity.attribute(named: name)
            if let why = unsettable(source) { throw refuse(source, "a batch update reads only stored attributes, and \(why)") }
            // Integers mix into any arithmetic type; other types only with their own.
            guard source.type == target.type || source.type.integerRange != nil else {
                throw refuse(target, "\(source) is \(source.type.coreDataName), which arithmetic on \(target.type.coreDataName) cannot mix in exactly")
            }
            return .column(source)
        case .add(let a, let b): return .add(try operand(a, for: target, on: entity), try operand(b, for: target, on: entity))
        case .subtract(let a, let b): return .subtract(try operand(a, for: target, on: entity), try operand(b, for: target, on: entity))
        case .multiply(let a, let b): return .multiply(try operand(a, for: target, on: entity), try operand(b, for: target, on: entity))
        }
    }
}
