import AmberTransformers
import AmberValues

/// A fetch request template as written in a model, before binding: a named
/// request whose predicate may hold `$VARIABLES`, filled in at each fetch.
///
/// ```swift
/// ModelDescription { … }
///     .template("booksByAuthor", entity: "Book", where: "author.name == $AUTHOR",
///               sortedBy: [.ascending("title")])
/// ```
public struct FetchTemplateDescription: Sendable, Hashable {
    /// The template's name, unique within its model.
    public var name: String
    /// The entity it fetches.
    public var entityName: String
    /// Predicate text in Core Data's syntax, with `$VARIABLES` (no `%@`); nil fetches all.
    public var predicate: String?
    /// The order, first key first.
    public var sortKeys: [SortKey]
    /// At most this many objects (nil: no limit).
    public var limit: Int?

    /// A template named `name` fetching `entityName` objects.
    public init(_ name: String, entity entityName: String, where predicate: String? = nil, sortedBy sortKeys: [SortKey] = [],
                limit: Int? = nil)
    {
        self.name = name
        self.entityName = entityName
        self.predicate = predicate
        self.sortKeys = sortKeys
        self.limit = limit
    }
}

extension ModelDescription {
    /// Adds a fetch request template (see ``FetchTemplateDescription``).
    public func template(_ name: String, entity: String, where predicate: String? = nil, sortedBy sortKeys: [SortKey] = [],
                         limit: Int? = nil) -> Self
    {
        var copy = self
        copy.templates.append(FetchTemplateDescription(name, entity: entity, where: predicate, sortedBy: sortKeys, limit: limit))
        return copy
    }
}

/// A bound fetch request template: its predicate parsed and its names
/// checked once, when the model was bound. Make a request from it with
/// ``Model/fetchRequest(fromTemplate:substituting:)``.
public struct FetchTemplate: Sendable {
    /// The template's name.
    public let name: String
    /// The entity it fetches.
    public let entityName: String
    /// The parsed predicate, variables unfilled; nil fetches all.
    public let predicate: FetchPredicate?
    /// The order, first key first.
    public let sortKeys: [SortKey]
    /// At most this many objects (nil: no limit).
    public let limit: Int?

    /// The names of its `$VARIABLES` (without the `$`), in the order they first appear.
    public var variables: [String] { predicate?.variables ?? [] }

    /// A request with every variable replaced by its value in `values`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidSubstitution(variable:message:)`` for a
    ///   variable with no value or a value for no variable; either message
    ///   names the template.
    public func request(substituting values: [String: Value]) throws(AmberError) -> FetchRequest {
        do throws(AmberError) {
            let filled = try FetchPredicate.substituting(values, into: predicate, owner: "the template")
            return FetchRequest(entityName, predicate: filled, sortedBy: sortKeys, limit: limit)
        } catch .invalidSubstitution(let variable, let message) {
            throw .invalidSubstitution(variable: variable, message: "template \(name): \(message)")
        }
    }
}

extension Model {
    /// The template named `name`.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownTemplate(name:suggestion:)`` with the nearest name.
    public func template(named name: String) throws(AmberError) -> FetchTemplate {
        guard let template = templates.first(where: { $0.name == name }) else {
            throw .unknownTemplate(name: name, suggestion: nearestName(to: name, in: templates.map(\.name)))
        }
        return template
    }

    /// A fetch request made from the template named `name`, with each of its
    /// `$VARIABLES` replaced by the value of the same name in `values` (the
    /// `Core Data` `fetchRequestFromTemplate(withName:substitutionVariables:)`).
    /// Values are compared as `%@` arguments are; change the request's
    /// order, window or prefetching as you like before fetching it.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownTemplate(name:suggestion:)``;
    ///   ``/AmberValues/AmberError/invalidSubstitution(variable:message:)`` for a variable
    ///   with no value or a value for no variable.
    public func fetchRequest(fromTemplate name: String, substituting values: [String: Value] = [:]) throws(AmberError) -> FetchRequest {
        try template(named: name).request(substituting: values)
    }

    /// Binds the model's templates: each parsed, its entity, key paths and
    /// sort keys resolved. Problems are added to `problems`, each placed as
    /// `templates.NAME`.
    static func bindTemplates(_ descriptions: [FetchTemplateDescription], entities: [String: Entity], model: [Entity],
                              problems: inout [ModelProblem]) -> [FetchTemplate]
    {
        var seen: Set<String> = []
        return descriptions.compactMap { description in
            let place = "templates.\(description.name)"
            let before = problems.count
            func problem(_ message: String) { problems.append(ModelProblem(place: place, message: message)) }
            if !seen.insert(description.name).inserted { problem("duplicate template name") }
            let bound = bindRequest(description, kind: "template", entities: entities, model: model, problem: problem)
            guard let bound, problems.count == before else { return nil }
            return FetchTemplate(name: description.name, entityName: bound.entity.name, predicate: bound.predicate,
                                 sortKeys: description.sortKeys, limit: description.limit)
        }
    }

    /// What a named request (a template, or a fetched property's request)
    /// fetches: its entity and its parsed predicate, its name, limit, key
    /// paths and sort keys checked, each problem handed to `problem`. Nil
    /// when its entity is unknown; the predicate is nil when there is none
    /// or it did not parse.
    static func bindRequest(_ description: FetchTemplateDescription, kind: String, entities: [String: Entity], model: [Entity],
                            problem: (String) -> Void) -> (entity: Entity, predicate: FetchPredicate?)?
    {
        if let issue = Identifier.problem(description.name, kind: kind) { problem(issue) }
        if let limit = description.limit, limit <= 0 { problem("limit must be 1 or more, not \(limit)") }
        guard let entity = entities[description.entityName] else {
            problem("entity \(description.entityName): no such entity" + AmberError.hint(nearestName(to: description.entityName, in: entities.keys)))
            return nil
        }
        var predicate: FetchPredicate?
        if let text = description.predicate {
            do throws(AmberError) {
                let parsed = try FetchPredicate(text)
                for use in parsed.keyPathUses {
                    if let issue = keyPathProblem(use.path, from: entity, model: model) { problem("predicate, position \(use.position): \(issue)") }
                }
                predicate = parsed
            } catch {
                problem("\(error)")
            }
        }
        for key in description.sortKeys {
            if let issue = keyPathProblem(key.key, from: entity, model: model, toOnesOnly: true) { problem("sort key: \(issue)") }
        }
        return (entity, predicate)
    }

    /// What is wrong with key path `path` from `entity`, or nil: each step
    /// names a relationship or (last) an attribute; a collection operator
    /// (`@count`, `@sum.price`) follows a relationship.
    static func keyPathProblem(_ path: String, from entity: Entity, model: [Entity], toOnesOnly: Bool = false) -> String? {
        let steps = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var current = entity
        var index = 0
        while index < steps.count {
            let step = steps[index]
            if step.hasPrefix("@") && !toOnesOnly {
                let operators = ["@count", "@sum", "@avg", "@min", "@max"]
                guard operators.contains(step.lowercased()) else {
                    return "\(step): no such collection operator" + AmberError.hint(nearestName(to: step, in: operators))
                }
                // `@count` ends the path; the others name one attribute of the members.
                guard index + 1 < steps.count else { return nil }
                let key = steps[index + 1]
                guard current.attributes.contains(where: { $0.name == key }) else {
                    return "\(current.name).\(key): no such attribute" + AmberError.hint(nearestName(to: key, in: current.attributes.map(\.name)))
                }
                return index + 2 == steps.count ? nil : "\(path) cannot go on after \(step).\(key)"
            }
            if let relationship = current.relationships.first(where: { $0.name == step }) {
                if toOnesOnly && relationship.isToMany { return "\(relationship) is to-many; a sort key follows to-one relationships" }
                current = model[relationship.destinationIndex]
            } else if let attribute = current.attributes.first(where: { $0.name == step }) {
                guard index == steps.count - 1 else { return "\(current.name).\(step) is an attribute; \(path) cannot go on from it" }
                if attribute.isTransient { return "\(attribute) is transient: the store has no value to compare or sort by" }
            } else {
                return "\(current.name).\(step): no such attribute or relationship"
                    + AmberError.hint(nearestName(to: step, in: current.attributes.map(\.name) + current.relationships.map(\.name)))
            }
            index += 1
        }
        return nil
    }
}
