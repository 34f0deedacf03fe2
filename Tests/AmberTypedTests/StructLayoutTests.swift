import Amber
import Foundation
import Testing

/// The structs the AmberGenerate plugin made from Shapes.amber.json: nested
/// struct classes mirrored byte for byte, and a struct whose layout does not
/// fit the model's refused; properties named like entities.
@Suite struct StructLayoutTests {
    static let modelURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Shapes.amber.json")

    func makeModel(_ edit: (inout ModelDescription) -> Void = { _ in }) throws -> Model {
        var description = try ModelDescription(contentsOf: Self.modelURL)
        edit(&description)
        return try Model(description)
    }

    @Test func nestedStructsAreLaidOutAsInC() throws {
        let model = try makeModel()
        try ShapesClasses.check(model)
        let edgeClass = try #require(model.structClass(named: "Edge"))
        #expect(Edge.layout == edgeClass.layout)
        #expect(MemoryLayout<Vertex>.size == 24 && MemoryLayout<Edge>.size == 56)

        // Written through the struct, read field by field at libffi's offsets (and back).
        let context = Context(store: try Store.inMemory(model: model))
        let drawing = try context.insert(Drawing.self)
        // Values that differ in every field and byte position, sweeping each type's range.
        for i in 0..<256 {
            func vertex(_ k: Int) -> Vertex {
                Vertex(x: Double(k) * 1234.5 - 1e5, y: 1 / Double(k + 1), tag: Int8(truncatingIfNeeded: k &* 37))
            }
            let edge = Edge(from: vertex(i), to: vertex(i + 300), weight: Int8(truncatingIfNeeded: 128 - i),
                            flags: UInt16(truncatingIfNeeded: i &* 257))
            try drawing.set(edge: edge)
            let stored = try drawing.object.value(forKey: "edge")
            let fields = try edgeClass.fieldValues(of: stored)
            let vertexClass = try #require(model.structClass(named: "Vertex"))
            let to = try vertexClass.fieldValues(of: try #require(fields["to"]))
            #expect(fields["weight"] == .int(Int64(edge.weight)) && fields["flags"] == .int(Int64(edge.flags)))
            #expect(to["x"] == .double(edge.to.x) && to["y"] == .double(edge.to.y) && to["tag"] == .int(Int64(edge.to.tag)))

            let fromFields = try edgeClass.value([
                "from": try vertexClass.value(["x": .double(edge.to.x), "y": .double(edge.to.y), "tag": .int(Int64(edge.to.tag))]),
                "to": try vertexClass.value(["x": .double(edge.from.x), "y": .double(edge.from.y), "tag": .int(Int64(edge.from.tag))]),
                "weight": .int(Int64(edge.weight)), "flags": .int(Int64(edge.flags)),
            ])
            try drawing.object.setValue(fromFields, forKey: "edge")
            #expect(try drawing.edge == Edge(from: edge.to, to: edge.from, weight: edge.weight, flags: edge.flags))
        }
    }

    @Test func paddingIsNotPartOfAValueAndEveryLastFieldKindIsPlaced() throws {
        let model = try makeModel()
        let context = Context(store: try Store.inMemory(model: model))
        let drawing = try context.insert(Drawing.self)
        let vertex = Vertex(x: 1, y: 2, tag: 3)
        let edge = Edge(from: vertex, to: vertex, weight: 4, flags: 0x0506)
        try drawing.set(edge: edge)
        // Bytes another program wrote, with something in the padding: C's byte 49 (between weight
        // and flags) and bytes 52-55 after flags. The value read is the same value.
        guard case .custom(let stored) = try drawing.object.value(forKey: "edge") else { Issue.record("not a custom value"); return }
        var bytes = stored.withUnsafeBytes { Array($0) }
        #expect(bytes.count == 56)
        for index in [23, 49, 52, 53, 54, 55] { bytes[index] = 0xAB }
        try drawing.object.setValue(.custom(CustomValue(className: "Edge", bytes: Data(bytes))), forKey: "edge")
        #expect(try drawing.edge == edge)
        #expect(try drawing.edge?.hashValue == edge.hashValue)
        #expect(try drawing.edge != Edge(from: vertex, to: vertex, weight: 4, flags: 0x0507))

        // A nested struct as the last field, and a bool.
        let path = Path(kind: -1, end: Vertex(x: 5, y: 6, tag: -7)), flag = Flag(x: 0.25, on: true)
        try drawing.set(path: path)
        try drawing.set(flag: flag)
        let pathClass = try #require(model.structClass(named: "Path")), flagClass = try #require(model.structClass(named: "Flag"))
        #expect(Path.layout == pathClass.layout && Flag.layout == flagClass.layout)
        let pathFields = try pathClass.fieldValues(of: try drawing.object.value(forKey: "path"))
        let end = try #require(model.structClass(named: "Vertex")).fieldValues(of: try #require(pathFields["end"]))
        #expect(pathFields["kind"] == .int(-1) && end["x"] == .double(5) && end["tag"] == .int(-7))
        #expect(try flagClass.fieldValues(of: try drawing.object.value(forKey: "flag")) == ["x": .double(0.25), "on": .bool(true)])
        #expect(try drawing.path == path && drawing.flag == flag)
    }

    @Test func aStructOfTheSameNameAndSizeWithOtherFieldsIsRefused() throws {
        let model = try makeModel { description in
            description.valueClasses[0] = .structure(name: "Vertex", fields: [
                FieldDescription("a", .double), FieldDescription("b", .double), FieldDescription("tag", .int8),
            ])
        }
        #expect(model.structClass(named: "Vertex")?.size == MemoryLayout<Vertex>.stride)
        #expect { try ShapesClasses.check(model) } throws: { error in
            "\(error)".contains("Drawing.corner: the class lays out Vertex as {x: double at 0")
                && "\(error)".contains("the model as {a: double at 0")
        }
        let context = Context(store: try Store.inMemory(model: model))
        #expect(throws: AmberError.self) { try context.insert(Drawing.self) }
        #expect(try context.fetch(FetchRequest("Drawing")).isEmpty)

        // Nor is an opaque class of the same name and size.
        let opaque = try makeModel { description in
            description.valueClasses = description.valueClasses.map { $0.name == "Flag" ? .opaque(name: "Flag", size: 16) : $0 }
        }
        #expect(MemoryLayout<Flag>.stride == 16)
        #expect { try ShapesClasses.check(opaque) } throws: { error in
            "\(error)".contains("Drawing.flag: the class reads Flag as a struct, the model's class is not one")
        }
    }

    /// A property named like a generated type would hide the type in its class: it gets a trailing `_`.
    @Test func propertiesNamedLikeEntitiesAreRenamedAndLeadToThem() throws {
        let context = Context(store: try Store.inMemory(model: try makeModel()))
        let layer = try context.insert(Layer.self)
        try layer.set(name: "ink")
        let drawing = try context.insert(Drawing.self)
        try drawing.set(Layer_: layer)
        try context.save()
        #expect(try drawing.Layer_ == layer)
        #expect(try layer.Drawing_ == [drawing])
        #expect(try drawing.object.object(forKey: "Layer") === layer.object)
    }
}
