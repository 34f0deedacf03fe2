import Amber
import ArgumentParser
import Foundation

/// `amber schema STORE|MODEL-FILE`: the model a store carries, or a model file's.
struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the model a store carries, or a model file's (JSON or Xcode).")

    @Argument(help: "The store (a path, a file: URL or a postgresql:// URL), or a model file: JSON, or an Xcode .xcdatamodeld, .xcdatamodel or contents file.",
              transform: storeName)
    var store: String

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var xcode: XcodeOptions

    @OptionGroup var storeModel: StoreModelOptions

    @Flag(help: "Print the model as JSON (the model file format).")
    var json = false

    func run() throws {
        try reportingErrors {
            try plugins.load()
            let opened = isServer(store) || ModelFile.kind(of: store) == .store
                ? try Store(existing: store, modelFile: storeModel.file, xcode: xcode) : nil
            let model: Model
            if let opened {
                model = opened.model
            } else {
                let (description, notes) = try ModelFile.read(store, options: xcode)
                ModelFile.printNotes(notes)
                model = try Model(description)
            }
            if json {
                print(model.description.jsonText(pretty: true))
                return
            }
            if let opened {
                print("store \(opened.identifier.uuidString), model version \(model.versionHash)")
            } else {
                print("model file \(store), model version \(model.versionHash)")
            }
            for valueClass in model.description.valueClasses { print("value class \(valueClass.name)") }
            // Where a sibling declared the name first, the column has the entity's name too (Amber's layout only).
            let coreData = !isServer(store) && Store.isCoreDataStore(atPath: store)
            let column = { (name: String, column: String) in coreData || name == column ? "" : ", column \(column)" }
            for entity in model.entities {
                let parent = model.parent(of: entity).map { " : \($0.name)" } ?? ""
                let kinds = [entity.isAbstract ? "abstract" : nil, entity.isExtensible ? "extensible" : nil].compactMap { $0 }
                print("\nentity \(entity.name)\(parent)" + (kinds.isEmpty ? "" : " (\(kinds.joined(separator: ", ")))"))
                for attribute in entity.attributes {
                    print("  \(attribute.name): \(attribute.type)\(Self.flags(attribute))" + column(attribute.name, attribute.columnName))
                }
                for relationship in entity.relationships {
                    print("  \(relationship.name): \(Self.describe(relationship))" + column(relationship.name, relationship.columnName))
                }
                for property in model.fetchedProperties(of: entity) {
                    print("  \(property.name): fetched " + Self.describe(entity: property.destinationName, property.predicate, property.sortKeys, property.limit))
                }
                for constraint in entity.uniquenessConstraints {
                    print("  unique (\(constraint.map(\.name).joined(separator: ", ")))")
                }
                for index in entity.indexes {
                    print("  index (\(index.map(\.name).joined(separator: ", ")))")
                }
                // Keys an entity's parent lists already are not listed again for it.
                if let opened, entity.isExtensible, model.parent(of: entity)?.isExtensible != true {
                    let usage = try opened.extendedKeyUsage(of: entity)
                    print("  extended keys: " + (usage.isEmpty ? "none yet" : usage.map { "\($0.key) (\($0.count))" }.joined(separator: ", ")))
                }
            }
            if !model.templates.isEmpty { print("") }
            for template in model.templates { print(Self.describe(template)) }
        }
    }

    /// `template booksByAuthor: Book where author.name == $AUTHOR, sorted by title, limit 10`.
    static func describe(_ template: FetchTemplate) -> String {
        "template \(template.name): " + describe(entity: template.entityName, template.predicate, template.sortKeys, template.limit)
    }

    /// `Book where author.name == $AUTHOR, sorted by title, limit 10`: a named request's fetch.
    static func describe(entity: String, _ predicate: FetchPredicate?, _ sortKeys: [SortKey], _ limit: Int?) -> String {
        var text = entity
        if let predicate { text += " where \(predicate.format)" }
        if !sortKeys.isEmpty {
            text += ", sorted by " + sortKeys.map { $0.key + ($0.ascending ? "" : " descending") }.joined(separator: ", ")
        }
        if let limit { text += ", limit \(limit)" }
        return text
    }

    /// `to-many Book, inverse author, ordered, cascade, count 1...5`.
    static func describe(_ relationship: Relationship) -> String {
        var parts = [(relationship.isToMany ? "to-many " : "to-one ") + relationship.destinationName,
                     relationship.inverseName.map { "inverse \($0)" } ?? "one-way"]
        if relationship.isOrdered { parts.append("ordered") }
        if !relationship.isOptional { parts.append("required") }
        parts.append("delete rule \(relationship.deleteRule.rawValue)")
        if relationship.minCount != nil || relationship.maxCount != nil {
            parts.append("count \(relationship.minCount.map(String.init) ?? "0")...\(relationship.maxCount.map(String.init) ?? "")")
        }
        return parts.joined(separator: ", ")
    }

    static func flags(_ attribute: Attribute) -> String {
        var flags: [String] = [attribute.isOptional ? "optional" : "required"]
        if let valueClass = attribute.valueClassName { flags.append("class \(valueClass)") }
        if !attribute.transformerNames.isEmpty { flags.append("via " + attribute.transformerNames.joined(separator: " > ")) }
        if attribute.isTransient { flags.append("transient") }
        if let computation = attribute.computation {
            flags.append("computed by \(computation.function) from \(computation.sources.joined(separator: ", "))")
        }
        if let derivation = attribute.derivation { flags.append("derived \(derivation)") }
        if attribute.isIndexed { flags.append("indexed") }
        if !attribute.defaultValue.isNull { flags.append("default \(attribute.defaultValue)") }
        let rules = attribute.validation
        if let v = rules.minValue { flags.append("min \(v)") }
        if let v = rules.maxValue { flags.append("max \(v)") }
        if let v = rules.minLength { flags.append("min length \(v)") }
        if let v = rules.maxLength { flags.append("max length \(v)") }
        if let v = rules.pattern { flags.append("pattern \(v)") }
        return ", " + flags.joined(separator: ", ")
    }
}
