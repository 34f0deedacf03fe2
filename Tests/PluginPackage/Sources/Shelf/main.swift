// Uses the classes the AmberGenerate plugin made from Shelf.amber.json and
// Recipes.xcdatamodeld at build time; prints what it read back, which
// scripts/test.sh compares with what it expects. Usage: Shelf FOLDER.
import Amber
import Foundation

let folder = URL(fileURLWithPath: CommandLine.arguments.dropFirst().first ?? ".")
let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

func run() throws {
    // The JSON model: relationships, a sub-entity, model logic.
    let shelfModel = try Model(ModelDescription(contentsOf: sources.appendingPathComponent("Shelf.amber.json")))
    try ShelfClasses.check(shelfModel)
    try shelfModel.use(LabelledShelf.self)
    let path = folder.appendingPathComponent("shelf.sqlite").path
    do {
        let context = Context(store: try Store(path: path, model: shelfModel))
        let shelf = try context.insert(Shelf.self)
        try shelf.set(label: "Pantry")
        let flour = try context.insert(Item.self)
        try flour.set(title: "Flour")
        try flour.set(weight: 1.5)
        let jar = try context.insert(Jar.self)
        try jar.set(title: "Honey")
        try jar.set(litres: ScaledDecimal("0.50")!)
        try shelf.set(items: [flour, jar])
        try context.save()

        let empty = try context.insert(Shelf.self)
        try empty.set(label: "")
        do {
            try context.save()
            print("an empty label was saved")
        } catch {
            // The problem without the object's ID, which differs per run.
            let line = "\(error)".split(separator: "\n").first { $0.contains("Shelf.label") }
            let problem = line.flatMap { line in line.range(of: "Shelf.label").map { line[$0.lowerBound...] } }
            print("refused:", problem.map(String.init) ?? "\(error)")
        }
    }

    // Reopened: what was saved reads back through the typed classes.
    let context = Context(store: try Store(path: path, model: shelfModel))
    for item in try context.fetch(Item.self, sortedBy: [.ascending("title")]) {
        let litres = (item as? Jar).flatMap { try? $0.litres }.map { "\($0) l" } ?? "-"
        print(try item.title, type(of: item), try item.weight.map { "\($0) kg" } ?? "-", litres, try item.shelf?.label ?? "-")
    }
    print("shelves:", try context.fetch(Shelf.self).map { "\(type(of: $0)) \(try $0.label)" })

    // The Xcode model.
    let recipes = try Model(XcodeModelImport(contentsOf: sources.appendingPathComponent("Recipes.xcdatamodeld")).model)
    try RecipesClasses.check(recipes)
    let kitchen = Context(store: try Store.inMemory(model: recipes))
    let bread = try kitchen.insert(Recipe.self)
    try bread.set(name: "Bread")
    try bread.set(minutes: 45)
    try kitchen.save()
    let minutes: Int16? = try kitchen.fetch(Recipe.self, where: "name == %@", "Bread").first?.minutes
    print("Recipe", minutes.map(String.init) ?? "-")

    // Classes used with a model they were not made from: refused, naming why.
    do {
        try ShelfClasses.check(recipes)
        print("the Shelf classes fit the Recipes model")
    } catch {
        print("mismatch:", "\(error)".split(separator: "\n").dropFirst().first.map { $0.trimmingCharacters(in: .whitespaces) } ?? "\(error)")
    }
}

do {
    try run()
} catch {
    print("error: \(error)")
    exit(1)
}
