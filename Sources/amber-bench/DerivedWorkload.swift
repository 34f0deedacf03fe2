import Amber
import Foundation

/// W11, a derived attribute: counting the books whose canonical title
/// contains a word, against the same search folding every title
/// (`title CONTAINS[cd]`), over N books. The reason to derive a canonical
/// title: the search compares stored bytes instead of folding each row.
struct DerivedWorkload {
    static let name = "W11 canonicalTitle CONTAINS[cd] vs title"
    let n: Int
    let workspace: URL

    /// Medians of the derived search (as Amber's time) and the folding one (as the reference), interleaved.
    func run(repetitions: Int) throws -> Result {
        let model = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.string("canonicalTitle").derived("canonical:(title)")
            }
        })
        let store = try Store(path: workspace.appendingPathComponent("derived.amber").path, model: model)
        let context = Context(store: store)
        let book = try model.entity(named: "Book"), title = try book.attribute(named: "title")
        let words = ["Crème", "brûlée", "Straße", "naïve", "Zürich", "café", "Ørsted", "éclair", "river", "Stone", "light", "Œuvre"]
        try context.insert(book, setting: [title], to: (0..<n).map { i in
            .string("\(words[i % words.count]) \(words[(i / 7) % words.count]) \(words[(i / 49) % words.count]) \(i)")
        })
        try context.save()
        let derived = try FetchRequest("Book", where: "canonicalTitle CONTAINS[cd] %@", .string("BRÛLÉE"))
        let folding = try FetchRequest("Book", where: "title CONTAINS[cd] %@", .string("BRÛLÉE"))
        return try compare("derived search", repetitions: repetitions, { try context.count(derived) },
                           against: { try context.count(folding) })
    }
}
