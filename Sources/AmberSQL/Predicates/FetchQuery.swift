import AmberModel
import AmberStore
import AmberValues

/// A compiled fetch: SQL text and the values to bind, for one request and entity.
package struct FetchQuery {
    package let sql: String
    package let bindings: [Value]
    /// The WHERE clause alone (nil: every row of the table) and its
    /// parameters, for statements other than SELECT over the same rows.
    package private(set) var condition: String?
    package private(set) var conditionBindings: [Value] = []
    /// Where the keys of `among` are bound (the last parameter), so the
    /// same text serves any list of keys (or any one key, when compiled
    /// for one).
    package private(set) var keysIndex: Int32?
    package private(set) var singleKey = false

    /// With `sortColumns`, the columns are `_pk` and then one per sort key
    /// (the value it orders by); with `keys`, only those rows are considered,
    /// in no particular order (the caller places them by those values), and
    /// the limit and offset do not apply.
    package init(request: FetchRequest, mapping: TableMapping, model: Model, columns: String, counting: Bool = false,
         sortColumns: Bool = false, among keys: [Int64]? = nil) throws(AmberError)
    {
        let compiler = PredicateCompiler(entity: mapping.entity, model: model, dialect: mapping.dialect)
        var terms: [(sql: String, bindings: [Value])] = []
        if !counting {
            for key in request.sortKeys {
                var term = try compiler.sortTerm(key.key)
                if key.caseInsensitive && (term.type == .string || term.mixed) { term = term.folded(1, by: mapping.dialect) }
                terms.append((term.sql, term.bindings))
            }
        }
        var bindings: [Value] = []
        var sql = "SELECT "
        if sortColumns {
            // Ordered by column number below, so each term is compiled and bound once.
            sql += (["_pk"] + terms.map(\.sql)).joined(separator: ", ")
            bindings += terms.flatMap(\.bindings)
        } else {
            sql += counting ? "1" : columns
        }
        let selectBindings = bindings.count
        sql += " FROM \(mapping.table)"
        var conditions: [String] = []
        // Rows of this entity (and those below it, unless asked not to) out of the hierarchy's table.
        if !request.includesSubentities && mapping.entity.subentityIndices.count > 1 {
            conditions.append("_entity = \(mapping.entity.index + 1)")
        } else if let filter = mapping.entityFilter {
            conditions.append(filter)
        }
        if let predicate = request.predicate {
            if let variable = predicate.firstVariable {
                throw .invalidSubstitution(variable: variable, message: "has no value in \"\(predicate.format)\"; "
                    + "fill the variables with FetchPredicate.substituting(_:) or fetch through a template")
            }
            let condition = try compiler.compile(predicate.root)
            conditions.append("(\(condition.sql))")
            bindings += condition.bindings
        }
        if !conditions.isEmpty {
            condition = conditions.joined(separator: " AND ")
            conditionBindings = Array(bindings[selectBindings...])
        }
        if let keys {
            keysIndex = Int32(bindings.count)
            // One key is a primary-key seek; a list costs the database a temporary table
            // (SQLite: about six seeks' worth).
            if keys.count == 1 {
                conditions.append("_pk = ?")
                singleKey = true
                bindings.append(.int(keys[0]))
            } else {
                conditions.append("_pk IN (\(mapping.dialect.keyListSubquery))")
                bindings.append(mapping.dialect.keyList(keys))
            }
        }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        if !counting && !(sortColumns && keys != nil) {
            var order: [String] = []
            for (index, (key, term)) in zip(request.sortKeys, terms).enumerated() {
                order.append((sortColumns ? String(index + 2) : term.sql) + mapping.dialect.direction(ascending: key.ascending))
                if !sortColumns { bindings += term.bindings }
            }
            order.append(sortColumns ? "1 ASC" : "_pk ASC")
            sql += " ORDER BY " + order.joined(separator: ", ")
        }
        if keys == nil, request.limit != nil || request.offset != 0 {
            try request.checkWindow()
            sql += " LIMIT ? OFFSET ?"
            bindings += mapping.dialect.limitParameters(limit: request.limit, offset: request.offset)
        }
        self.sql = counting ? "SELECT count(*) FROM (\(sql)) AS counted" : sql
        self.bindings = bindings
    }
}
