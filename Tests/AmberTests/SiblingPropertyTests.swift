import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberValues

/// Sibling sub-entities that declare properties of one name, as Core Data
/// allows: each keeps its own column of the hierarchy's table, and every
/// store keeps their values, links, predicates, constraints and migrations apart.
@Suite struct SiblingPropertyTests {
    /// Two kinds of attachment, each with its own `caption`, `size` (of different types) and `owner`.
    static func model(videoFirst: Bool = false, videoCaption: Bool = true) throws -> Model {
        let image = EntityDescription("ImageAttachment") {
            Attribute.string("caption").indexed()
            Attribute.integer32("size")
            Relationship.toOne("owner", "Post", inverse: "images")
        }.inheriting(from: "Attachment")
        let video = EntityDescription("VideoAttachment") {
            if videoCaption { Attribute.string("caption") }
            Attribute.double("size")
            Relationship.toOne("owner", "Post", inverse: "videos")
        }.inheriting(from: "Attachment").unique(videoCaption ? "caption" : "size")
        var description = ModelDescription {
            EntityDescription("Attachment") { Attribute.date("added") }.abstract()
            EntityDescription("Post") {
                Attribute.string("text")
                Attribute.integer64("videoCount").derived("videos.@count")
                Attribute.double("largestVideo").derived("videos.@max.size")
                Relationship.toMany("images", "ImageAttachment", inverse: "owner").deleteRule(.cascade)
                Relationship.toMany("videos", "VideoAttachment", inverse: "owner").ordered()
            }
        }
        description.entities.insert(contentsOf: videoFirst ? [video, image] : [image, video], at: 1)
        return try Model(description)
    }

    @Test func eachDeclarerHasItsOwnColumn() throws {
        let model = try Self.model()
        let image = try model.entity(named: "ImageAttachment"), video = try model.entity(named: "VideoAttachment")
        #expect(try image.attribute(named: "caption").columnName == "caption")
        #expect(try video.attribute(named: "caption").columnName == "VideoAttachment.caption")
        #expect(try video.relationship(named: "owner").columnName == "VideoAttachment.owner")
        #expect(try video.attribute(named: "size").type == .double && image.attribute(named: "size").type == .integer32)
        // Reordering the model moves the plain name to the entity now first.
        let reordered = try Self.model(videoFirst: true)
        #expect(try reordered.entity(named: "VideoAttachment").attribute(named: "caption").columnName == "caption")
        #expect(try reordered.entity(named: "ImageAttachment").attribute(named: "caption").columnName == "ImageAttachment.caption")
    }

    /// A post with images and videos, saved; returns the context.
    static func fill(_ store: Store) throws -> Context {
        let context = Context(store: store)
        for index in 0..<4 {
            let post = try context.insert("Post")
            try post.setValue(.string("post \(index)"), forKey: "text")
            var images: [ManagedObject] = [], videos: [ManagedObject] = []
            for member in 0...index {
                let image = try context.insert("ImageAttachment"), video = try context.insert("VideoAttachment")
                try image.setValue(.string("shared \(member)"), forKey: "caption")
                try image.setValue(.int(Int64(index * 10 + member)), forKey: "size")
                try video.setValue(.string("video \(index).\(member)"), forKey: "caption")
                try video.setValue(.double(Double(index) + Double(member) / 4), forKey: "size")
                images.append(image)
                videos.append(video)
            }
            try post.setObjects(images, forKey: "images")
            // Newest first: the order is the relationship's, not the keys'.
            try post.setObjects(videos.reversed(), forKey: "videos")
        }
        try context.save()
        return context
    }

    @Test(arguments: StoreKind.allCases)
    func valuesLinksAndPredicatesStayApart(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(try Self.model())
        defer { cleanup() }
        _ = try Self.fill(store)
        let context = Context(store: store)
        // A fetch of the root reads each row's own columns, with its own type.
        let all = try context.fetch(FetchRequest("Attachment"))
        #expect(all.count == 20)
        for object in all {
            let size = try object.value(forKey: "size")
            switch object.entity.name {
            case "ImageAttachment":
                guard case .int = size else { Issue.record("\(kind): image size \(size)"); continue }
            default:
                guard case .double = size else { Issue.record("\(kind): video size \(size)"); continue }
            }
        }
        // Predicates and sorts name each entity's own column.
        #expect(try context.count(FetchRequest("ImageAttachment", where: "caption BEGINSWITH 'shared'")) == 10)
        #expect(try context.count(FetchRequest("VideoAttachment", where: "caption BEGINSWITH 'shared'")) == 0)
        #expect(try context.count(FetchRequest("VideoAttachment", where: "size >= 3")) == 4)
        #expect(try context.count(FetchRequest("ImageAttachment", where: "size >= 3")) == 9)
        let videos = try context.fetch(FetchRequest("VideoAttachment", sortedBy: [.descending("size")]))
        #expect(try videos.map { try $0.value(forKey: "size") }.first == .double(3.75))
        #expect(try context.count(FetchRequest("Post", where: "ANY videos.caption == 'video 2.1' AND ANY images.caption == 'shared 2'")) == 1)
        #expect(try context.count(FetchRequest("Post", where: "images.@sum.size > 60")) == 2)
        // Links: each side follows its own column, the ordered one in its own order.
        let posts = try context.fetch(FetchRequest("Post", sortedBy: [.ascending("text")]))
        let last = try #require(posts.last)
        #expect(try last.objects(forKey: "images").count == 4)
        #expect(try last.objects(forKey: "videos").map { try $0.value(forKey: "caption") }
            == (0...3).reversed().map { .string("video 3.\($0)") })
        for video in try last.objects(forKey: "videos") { #expect(try video.object(forKey: "owner") === last) }
        // Derived values over the sibling's own columns.
        #expect(try last.value(forKey: "videoCount") == .int(4))
        #expect(try last.value(forKey: "largestVideo") == .double(3.75))
    }

    @Test(arguments: StoreKind.allCases)
    func constraintsBatchesAndDeletesKeepToTheirEntity(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(try Self.model())
        defer { cleanup() }
        let context = try Self.fill(store)
        // The uniqueness of VideoAttachment.caption does not reach images of the same caption.
        let image = try context.insert("ImageAttachment")
        try image.setValue(.string("video 0.0"), forKey: "caption")
        try context.save()
        let video = try context.insert("VideoAttachment")
        try video.setValue(.string("video 0.0"), forKey: "caption")
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else {
            Issue.record("\(kind): a second video captioned video 0.0 was saved")
            return
        }
        #expect(problems.map(\.place) == ["VideoAttachment(caption)"], "\(problems)")
        context.rollback()
        // Batch changes write the entity's own column only.
        let doubled = try context.batchUpdate(FetchRequest("VideoAttachment", where: "size < 2"), set: ["size": .attribute("size") * 2])
        #expect(doubled.objectIDs.count == 3)
        #expect(try context.count(FetchRequest("ImageAttachment", where: "size == 0")) == 1)
        #expect(try context.count(FetchRequest("VideoAttachment", where: "size == 2.5")) == 2)
        let removed = try context.batchDelete(FetchRequest("ImageAttachment", where: "caption == 'video 0.0'"))
        #expect(removed.objectIDs.count == 1)
        #expect(try context.count(FetchRequest("VideoAttachment", where: "caption == 'video 0.0'")) == 1)
        // Deleting a post cascades to its images and clears its videos' own owner column.
        let post = try #require(try context.fetch(FetchRequest("Post", where: "text == 'post 3'")).first)
        try context.delete(post)
        try context.save()
        let fresh = Context(store: store)
        #expect(try fresh.count(FetchRequest("ImageAttachment")) == 6)
        #expect(try fresh.count(FetchRequest("VideoAttachment", where: "owner == nil")) == 4)
        #expect(try fresh.count(FetchRequest("ImageAttachment", where: "owner == nil")) == 0)
    }

    @Test(arguments: StoreKind.allCases.filter(\.migrates))
    func migrationsMoveEachDeclarersValues(kind: StoreKind) throws {
        // First without VideoAttachment.caption; then with it (a column of its own); then with the
        // entities reordered, so the plain column changes hands and every value stays with its entity.
        let (first, cleanup) = try kind.open(try Self.model(videoCaption: false))
        defer { cleanup() }
        let context = Context(store: first)
        for index in 0..<3 {
            let image = try context.insert("ImageAttachment"), video = try context.insert("VideoAttachment")
            try image.setValue(.string("image \(index)"), forKey: "caption")
            try video.setValue(.double(Double(index) + 0.5), forKey: "size")
        }
        try context.save()
        let second = try #require(try kind.reopen(first, model: try Self.model()))
        let adding = Context(store: second)
        #expect(try adding.count(FetchRequest("VideoAttachment", where: "caption == nil")) == 3)
        for (index, video) in try adding.fetch(FetchRequest("VideoAttachment", sortedBy: [.ascending("size")])).enumerated() {
            try video.setValue(.string("video \(index)"), forKey: "caption")
        }
        try adding.save()
        let third = try #require(try kind.reopen(second, model: try Self.model(videoFirst: true)))
        let reading = Context(store: third)
        let images = try reading.fetch(FetchRequest("ImageAttachment", sortedBy: [.ascending("caption")]))
        let videos = try reading.fetch(FetchRequest("VideoAttachment", sortedBy: [.ascending("caption")]))
        #expect(try images.map { try $0.value(forKey: "caption") } == (0..<3).map { .string("image \($0)") })
        #expect(try videos.map { try $0.value(forKey: "caption") } == (0..<3).map { .string("video \($0)") })
        #expect(try videos.map { try $0.value(forKey: "size") } == (0..<3).map { .double(Double($0) + 0.5) })
        #expect(try reading.count(FetchRequest("ImageAttachment", where: "size == nil")) == 3)
    }

    @Test func anXcodeModelWithSiblingPropertiesImportsAndSaves() throws {
        let imported = try importXML("""
            <entity name="Attachment" representedClassName="Attachment" isAbstract="YES" syncable="YES">
                <attribute name="remoteURL" optional="YES" attributeType="URI"/>
            </entity>
            <entity name="ImageAttachment" parentEntity="Attachment" syncable="YES">
                <attribute name="blurhash" optional="YES" attributeType="String"/>
                <attribute name="width" attributeType="Integer 32" defaultValueString="0" usesScalarValueType="YES"/>
            </entity>
            <entity name="VideoAttachment" parentEntity="Attachment" syncable="YES">
                <attribute name="blurhash" optional="YES" attributeType="String"/>
                <attribute name="width" attributeType="Double" defaultValueString="0.0" usesScalarValueType="YES"/>
            </entity>
            """)
        #expect(imported.notes.isEmpty, "\(imported.notes)")
        let context = Context(store: try Store.inMemory(model: try Model(imported.model)))
        let video = try context.insert("VideoAttachment"), image = try context.insert("ImageAttachment")
        try video.setValue(.double(1.5), forKey: "width")
        try image.setValue(.int(640), forKey: "width")
        try context.save()
        let widths = try Context(store: context.store).fetch(FetchRequest("Attachment")).map { "\($0.entity.name) \(try $0.value(forKey: "width"))" }
        #expect(widths.sorted() == ["ImageAttachment \(Value.int(640))", "VideoAttachment \(Value.double(1.5))"])
    }
}
