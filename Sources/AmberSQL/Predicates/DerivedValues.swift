import AmberModel
import AmberValues

extension PredicateCompiler {
    /// The SQL computing `derivation` for this scope's row (as attribute
    /// `type`): a column or correlated subquery, folded or aggregated.
    /// The model checked the expression at bind, so only the database can fail here.
    package func derivedValue(_ derivation: Derivation, as type: AttributeType) throws(AmberError) -> String {
        switch derivation.form {
        case .now:
            return dialect.now
        case .value(let path):
            return try sortTerm(path.joined(separator: ".")).sql
        case .function(let function, let path):
            let source = try sortTerm(path.joined(separator: ".")).sql
            switch function {
            case .canonical: return dialect.fold(source, flags: ComparisonOptions([.caseInsensitive, .diacriticInsensitive]).rawValue)
            case .lowercase: return dialect.changeCase(source, upper: false)
            case .uppercase: return dialect.changeCase(source, upper: true)
            }
        case .aggregate(let name, let operation, let key):
            guard let relationship = entity.relationships.first(where: { $0.name == name }) else {
                throw .invalidValue(place: "\(entity.name).\(name)", expected: "a to-many relationship", given: "none")
            }
            let member = counter.alias()
            let from = members(relationship, owner: "\(alias)._pk", member: member)
            let column = "\(member).\(quote(key.map { model.destination(of: relationship).existingAttribute(named: $0)?.columnName ?? $0 } ?? ""))"
            switch operation {
            case .count: return "(SELECT count(*) \(from))"
            // An integer sum stays exact (the database reports an overflow); a floating one never overflows.
            case .sum: return type == .integer64 ? "(SELECT coalesce(sum(\(column)), 0) \(from))" : "(SELECT \(dialect.floatingSum(column)) \(from))"
            case .avg: return "(SELECT avg(\(column)) \(from))"
            case .min: return "(SELECT min(\(column)) \(from))"
            case .max: return "(SELECT max(\(column)) \(from))"
            }
        }
    }
}
