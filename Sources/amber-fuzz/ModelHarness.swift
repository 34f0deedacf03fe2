import Amber
import Foundation

/// Model files, JSON or Xcode: whatever binds must read back from its own
/// JSON with the same version hash, and make a store.
enum ModelHarness {
    static func runJSON(_ bytes: UnsafeRawBufferPointer) {
        guard let description = try? ModelDescription(json: Data(bytes)) else { return }
        checkReadsBack(description)
    }

    static func runXcode(_ bytes: UnsafeRawBufferPointer) {
        guard let imported = try? XcodeModelImport(xml: Data(bytes)) else { return }
        checkReadsBack(imported.model)
    }

    private static func checkReadsBack(_ description: ModelDescription) {
        // A registry per input: value classes a model declares are registered by its binding.
        guard let model = try? Model(description, registry: Registry()) else { return }
        let json = model.description.jsonText()
        let again: Model
        do {
            again = try Model(ModelDescription(json: Data(json.utf8)), registry: Registry())
        } catch {
            fatalError("a model that binds does not read back from its JSON: \(error)\n\(json)")
        }
        guard again.versionHash == model.versionHash else {
            fatalError("a model read back from its JSON has another version hash: \(model.versionHash), \(again.versionHash)\n\(json)")
        }
        do {
            let context = Context(store: try Store.inMemory(model: model))
            for entity in model.entities where !entity.isAbstract { _ = try context.count(FetchRequest(entity.name)) }
        } catch {
            fatalError("a model that binds does not make a store: \(error)\n\(json)")
        }
    }
}
