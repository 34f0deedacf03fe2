import AmberTransformers
import AmberValues
import Foundation

/// What the SQL compiler and the in-memory evaluator both ask of a
/// comparison's operands before they read anything, so both take a
/// predicate the same way and refuse it in the same words.
extension Comparison {
    /// The comparison as stores and the evaluator compile it: with its
    /// ``effectiveOptions``, and a key path moved to the left where the
    /// operator allows (`3 < price` is `price > 3`), so constants take its type.
    package var normalized: Comparison {
        var c = self
        c.options = effectiveOptions
        if case .value = lhs, let swapped = op.swapped {
            if case .value = rhs { return c }
            (c.lhs, c.rhs, c.op) = (rhs, lhs, swapped)
        }
        return c
    }

    /// The comparison's `[c]` and `[d]`, less a `[c]` against constants with
    /// no cased character (digits, punctuation): folding case never creates,
    /// removes or splits such characters, so dropping it changes no answer
    /// and lets a store compare bytes instead of folding every row. `[d]` is
    /// kept: it can remove marks between them.
    package var effectiveOptions: ComparisonOptions {
        guard options == .caseInsensitive else { return options }
        let constants: [Value]
        switch rhs {
        case .value(let value, _): constants = [value]
        case .list(let items, _): constants = items.compactMap { if case .value(let v, _) = $0 { v } else { nil } }
        default: return options
        }
        let uncased = constants.allSatisfy { value in
            guard case .string(let text) = value else { return false }
            return text.lowercased() == text && text.uppercased() == text
        }
        return uncased ? [] : options
    }
}

extension Operand {
    /// The items after `op` (`IN`, `BETWEEN`): a list `{…}` or an array argument.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidPredicate(position:message:)`` for anything else.
    package func listItems(_ op: String) throws(AmberError) -> [Operand] {
        switch self {
        case .list(let items, _): return items
        case .value(.array(let values), let position): return values.map { .value($0, position: position) }
        default: throw .invalidPredicate(position: position, message: "\(op) needs a list {…} or an array argument")
        }
    }

    /// The object ID a constant gives: an object ID, or its URI form as text
    /// (how C and Python pass lists of objects: a JSON array of URIs).
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidPredicate(position:message:)`` for a key path or another value.
    package func objectID() throws(AmberError) -> ObjectID {
        guard case .value(let value, let position) = self else {
            throw .invalidPredicate(position: position, message: "an object is compared with an object ID, not with a key path")
        }
        if case .objectID(let id) = value { return id }
        if case .string(let text) = value, let url = URL(string: text), let id = ObjectID(uri: url) { return id }
        throw .invalidPredicate(position: position, message: "an object is compared with an object ID, given \(value.valueClass) \(value)")
    }

    /// A constant compared with extended attribute `place` by `op`, in the
    /// form its stored values take (``/AmberModel/ExtendedValues/comparable(_:)``:
    /// a date as seconds, a UUID as text); a list or array after `IN` or `BETWEEN` item by item.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidPredicate(position:message:)`` for a value extended attributes cannot hold.
    package func extendedConstant(_ op: ComparisonOperator, _ place: String) throws(AmberError) -> Operand {
        switch self {
        case .value(.array(let items), let position) where op == .in || op == .between:
            return try Operand.list(items.map { .value($0, position: position) }, position: position).extendedConstant(op, place)
        case .list(let items, let position):
            return .list(try items.map { (item) throws(AmberError) in try item.extendedConstant(op, place) }, position: position)
        case .value(let value, let position):
            guard let form = ExtendedValues.comparable(value) else {
                throw .invalidPredicate(position: position, message: "\(place) is an extended attribute: it compares with strings, numbers, "
                    + "Booleans, dates, decimals, UUIDs, URIs and binary values, not with \(value.valueClass) \(value)")
            }
            return .value(form, position: position)
        default:
            return self
        }
    }
}

extension Model {
    /// Whether `id` can name a row of `entity`: its entity is `entity` or
    /// inherits from it (an entity of another model names no row here).
    package func names(_ id: ObjectID, aRowOf entity: Entity) -> Bool {
        (try? self.entity(named: id.entityName))?.isKind(of: entity) == true
    }
}
