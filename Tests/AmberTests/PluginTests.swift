import CSQLite
import AmberPluginABI
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// The repository's root, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Compiles C plugin sources into a shared library in `directory`, as a plugin author would.
func compilePlugin(_ sources: [String], named name: String, in directory: URL, libraries: [String] = [],
                   warnings: [String] = ["-Wall", "-Werror"]) throws -> String
{
    let output = directory.appendingPathComponent("\(name).so").path
    let include = repositoryRoot.appendingPathComponent("include").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["cc", "-std=c11", "-shared", "-fPIC"] + warnings + ["-I", include, "-o", output] + sources
        + libraries.map { "-l\($0)" }
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw TestFailure() }
    return output
}

/// A sample plugin from Sources/Plugins, compiled with cc.
func samplePlugin(_ folder: String, _ file: String, in directory: URL, libraries: [String] = []) throws -> String {
    try compilePlugin([repositoryRoot.appendingPathComponent("Sources/Plugins/\(folder)/\(file)").path],
                      named: "lib\(folder.lowercased())", in: directory, libraries: libraries)
}

let testKey = String(repeating: "0123456789abcdef", count: 4)

@Suite struct SamplePluginTests {
    @Test func colorPluginStoresColorsAsPortableBytes() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let registry = Registry()
        let info = try registry.loadPlugin(at: try samplePlugin("Color", "color.c", in: directory))
        #expect(info.name == "color" && info.version == "1.0.0")
        #expect(info.classes == ["Color"] && info.transformers.map(\.name) == ["ColorToData"])
        #expect(info.transformers[0] == PluginInfo.TransformerInfo(name: "ColorToData", inputClass: "Color", outputClass: "Binary",
                                                                   isReversible: true, isThreadSafe: true))
        let model = try coverModel(registry)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        let book = try context.insert("Book")
        try book.setValue("Dune", forKey: "title")
        let sand = try color(0.5, 0.25, 1, 1, in: registry)
        try book.setValue(sand, forKey: "cover")
        try context.save()
        let reader = Context(store: store)
        #expect(try reader.fetch("Book")[0].value(forKey: "cover") == sand)
        // Little-endian IEEE 754: 0.5 is 00 00 00 3F.
        let statement = try store.connection.statement("SELECT hex(cover) FROM Book")
        defer { statement.reset() }
        #expect(try statement.step())
        #expect(try statement.string(0) == "0000003F0000803E0000803F0000803F")
    }

    @Test func theValueAPIsReverseThroughBytesMatchesTheValuePath() throws {
        // The colour plugin reverses through its byte function; the Swift fixture has value functions
        // only. Same stored form (four little-endian floats): the same values back, and the same refusals.
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plugin = Registry()
        try plugin.loadPlugin(at: try samplePlugin("Color", "color.c", in: directory))
        let swift = try colorRegistry()
        let (fast, plain) = (try plugin.transformer(named: "ColorToData"), try swift.transformer(named: "ColorToData"))
        var random = SplitMix64(seed: 41)
        for _ in 0..<500 {
            let channels = (0..<4).map { _ in Float(bitPattern: UInt32(truncatingIfNeeded: random.next())) }
            let value = try color(channels[0], channels[1], channels[2], channels[3], in: swift)
            let stored = try plain.forward(value)
            #expect(try fast.forward(value) == stored)
            let (viaBytes, viaValues) = (try fast.reverse(stored), try plain.reverse(stored))
            // Bit for bit (NaNs included), not by Float equality.
            guard case .custom(let a) = viaBytes, case .custom(let b) = viaValues else {
                Issue.record("a colour came back as \(viaBytes), \(viaValues)")
                return
            }
            #expect(a.className == b.className && a.bytes == b.bytes)
        }
        for count in [0, 15, 17] {
            let wrong = Value.binary(Data(count: count))
            #expect(amberError { _ = try fast.reverse(wrong) } != nil, "\(count) bytes")
            #expect(amberError { _ = try plain.reverse(wrong) } != nil, "\(count) bytes")
        }
        for transformer in [fast, plain] {
            #expect(amberError { _ = try transformer.reverse("not bytes") }?.description
                .contains("reverse takes Binary, not String \"not bytes\"; nothing was called") == true)
        }
    }

    @Test func rectPluginStoresReadableStrings() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let registry = Registry()
        try registry.loadPlugin(at: try samplePlugin("Rect", "rect.c", in: directory))
        let model = try Model(ModelDescription {
            EntityDescription("Shape") { Attribute.transformable("frame", valueClass: "Rect", transformers: ["RectToString"]) }
        }, registry: registry)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        let rect = try #require(registry.structClass(named: "Rect"))
        let frame = try rect.value(["x": 1, "y": 2.5, "w": 0.1, "h": -4])
        try context.insert("Shape").setValue(frame, forKey: "frame")
        try context.save()
        #expect(try Context(store: store).fetch("Shape")[0].value(forKey: "frame") == frame, "0.1 survives exactly")
        let statement = try store.connection.statement("SELECT frame FROM Shape")
        defer { statement.reset() }
        #expect(try statement.step())
        #expect(try statement.string(0) == "{{1, 2.5}, {0.10000000000000001, -4}}")
    }

    @Test func deflateAndAESGCMChainWithColor() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let registry = Registry()
        try registry.loadPlugin(at: try samplePlugin("Deflate", "deflate.c", in: directory, libraries: ["z"]), configuration: "level=9")
        try registry.loadPlugin(at: try samplePlugin("AESGCM", "aesgcm.c", in: directory, libraries: ["crypto"]),
                                configuration: "key=\(testKey)")
        let model = try Model(ModelDescription {
            EntityDescription("Vault") {
                Attribute.transformable("blob", valueClass: "Binary", transformers: ["Deflate", "AESGCM"])
                Attribute.transformable("secret", valueClass: "String", transformers: ["AESGCMString"])
            }
        }, registry: registry)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        let vault = try context.insert("Vault")
        let blob = Data(repeating: 7, count: 100_000)
        try vault.setValue(.binary(blob), forKey: "blob")
        try vault.setValue("the crow flies at midnight", forKey: "secret")
        try context.save()
        let fetched = try Context(store: store).fetch("Vault")[0]
        #expect(try fetched.value(forKey: "blob") == .binary(blob))
        #expect(try fetched.value(forKey: "secret") == "the crow flies at midnight")
        let statement = try store.connection.statement("SELECT length(blob), instr(secret, CAST('crow' AS BLOB)) FROM Vault")
        defer { statement.reset() }
        #expect(try statement.step())
        #expect(statement.int64(0) < 1000, "compressed, then sealed")
        #expect(statement.int64(1) == 0, "the plaintext is not in the store")
    }

    @Test func aWrongKeyOrTamperedBytesAreADecodeErrorNeverGarbage() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plugin = try samplePlugin("AESGCM", "aesgcm.c", in: directory, libraries: ["crypto"])
        let path = directory.appendingPathComponent("vault.amber").path
        func model(key: String) throws -> Model {
            let registry = Registry()
            try registry.loadPlugin(at: plugin, configuration: "key=\(key)")
            return try Model(ModelDescription {
                EntityDescription("Vault") { Attribute.transformable("secret", valueClass: "String", transformers: ["AESGCMString"]) }
            }, registry: registry)
        }
        do {
            let context = Context(store: try Store(path: path, model: try model(key: testKey)))
            try context.insert("Vault").setValue("s3cret", forKey: "secret")
            try context.insert("Vault").setValue("other", forKey: "secret")
            try context.save()
        }
        let wrongKey = String(repeating: "f", count: 64)
        let wrong = try Context(store: try Store(path: path, model: try model(key: wrongKey))).fetch("Vault")
        let error = amberError { _ = try wrong[0].value(forKey: "secret") }
        #expect(error?.description.contains("transformer \"AESGCMString\" (libaesgcm.so) reverse failed: returned status -1") == true)

        var db: OpaquePointer?
        sqlite3_open(path, &db)
        sqlite3_exec(db, "UPDATE Vault SET secret = CAST(substr(secret, 1, 20) || x'00' || substr(secret, 22) AS BLOB) WHERE _pk = 1", nil, nil, nil)
        sqlite3_close(db)
        let tampered = try Context(store: try Store(path: path, model: try model(key: testKey))).fetch("Vault", sortedBy: [.ascending("secret")])
        let results = tampered.map { object in Result { () throws(AmberError) in try object.value(forKey: "secret") } }
        #expect(results.filter { if case .failure = $0 { true } else { false } }.count == 1, "the tampered row fails")
        #expect(results.contains { (try? $0.get()) == "other" }, "the other row still reads")

        let registry = Registry()
        #expect(amberError { try registry.loadPlugin(at: plugin) }?.description
            == "\(plugin): transformer \"AESGCM\": create failed with status -1: aesgcm: configuration needs key=<64 hex digits>")
        #expect(amberError { try registry.loadPlugin(at: plugin, configuration: "key=abc") } != nil)
        #expect(registry.transformerNames == [Registry.archiveTransformerName, Registry.jsonTransformerName, Registry.utf8TransformerName])
    }

    @Test func theSwiftPluginIsLoadedLikeAnyOther() throws {
        // Built by `swift build` as a product beside the test bundle (the test command builds first).
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [bin, bin.deletingLastPathComponent()].map { $0.appendingPathComponent("libAmberBase64Plugin.so").path }
        guard let plugin = candidates.first(where: FileManager.default.fileExists) else {
            Issue.record("libAmberBase64Plugin.so not found next to \(bin.path): run `swift build` before `swift test`")
            return
        }
        let registry = Registry()
        let info = try registry.loadPlugin(at: plugin)
        #expect(info.name == "base64" && info.transformers.map(\.name) == ["Base64"])
        let model = try Model(ModelDescription {
            EntityDescription("File") { Attribute.transformable("content", valueClass: "Binary", transformers: ["Base64"]) }
        }, registry: registry)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        try context.insert("File").setValue(.binary(Data("hello".utf8)), forKey: "content")
        try context.save()
        #expect(try Context(store: store).fetch("File")[0].value(forKey: "content") == .binary(Data("hello".utf8)))
        #expect(try Context(store: store).fetch("File", where: "content == %@", .binary(Data("hello".utf8))).count == 1)
        let statement = try store.connection.statement("SELECT content FROM File")
        defer { statement.reset() }
        #expect(try statement.step())
        #expect(try statement.string(0) == "aGVsbG8=")
    }
}

@Suite struct PluginRefusalTests {
    /// Every file of Tests/PluginCorpus breaks one rule; its first line says what the error must contain.
    static let corpus: [String] = {
        let folder = repositoryRoot.appendingPathComponent("Tests/PluginCorpus")
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".c") }.sorted()
    }()

    @Test(arguments: corpus)
    func badPluginsAreRefusedWholeWithTheFileAndTheReason(_ file: String) throws {
        let source = repositoryRoot.appendingPathComponent("Tests/PluginCorpus/\(file)")
        let text = try String(contentsOf: source, encoding: .utf8)
        let expected = try #require(text.split(separator: "\n").first.flatMap { line -> String? in
            guard let range = line.range(of: "/* expect: ") else { return nil }
            return String(line[range.upperBound...].dropLast(3))
        })
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Unresolved symbols are allowed at link time, so dlopen (RTLD_NOW) is what catches them.
        // The corpus is deliberately odd C (unused helpers, bad strings): no -Werror.
        let plugin = try compilePlugin([source.path], named: String(file.dropLast(2)), in: directory, warnings: ["-w"])
        let registry = Registry()
        let error = amberError { try registry.loadPlugin(at: plugin) }
        guard case .pluginRefused(let path, let message) = error else {
            Issue.record("\(file): expected a refusal, got \(String(describing: error))")
            return
        }
        #expect(path == plugin)
        #expect(message.contains(expected), "\(file): \(message)")
        #expect(error?.description.hasPrefix(plugin) == true)
        #expect(registry.transformerNames == [Registry.archiveTransformerName, Registry.jsonTransformerName, Registry.utf8TransformerName], "nothing registered")
        #expect(registry.structClass(named: "Color") == nil)
        #expect(amberError { try registry.declare(.opaque(name: "Partial", size: 8)) } == nil, "no class of a refused plugin stays")
    }

    /// A plugin compiled before the ABI's minor versions (a descriptor without
    /// abi_minor) still loads; the samples declare the current minor.
    @Test func pluginsOfAnEarlierMinorVersionStillLoad() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("minor0.c")
        try """
        #include <amber_plugin.h>
        #include <stddef.h>
        static const amber_plugin_class classes[] = {{"Tag", AMBER_PLUGIN_CLASS_OPAQUE, NULL, 0, 4}};
        static const amber_plugin_descriptor descriptor = {
            offsetof(amber_plugin_descriptor, abi_minor), AMBER_PLUGIN_ABI_VERSION, "minor0", "0.1",
            sizeof(amber_plugin_class), 1, classes, sizeof(amber_plugin_transformer), 0, NULL, 99};
        const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) { (void)host; return &descriptor; }
        """.write(to: source, atomically: true, encoding: .utf8)
        let old = try compilePlugin([source.path], named: "libminor0", in: directory)
        let registry = Registry()
        let info = try registry.loadPlugin(at: old)
        #expect(info.abiMinor == 0, "the host reads no further than the plugin's struct_size")
        #expect(info.classes == ["Tag"])
        let current = try registry.loadPlugin(at: try samplePlugin("Color", "color.c", in: directory))
        #expect(current.abiMinor == Int(AMBER_PLUGIN_ABI_MINOR))
        #expect(current.abi == "\(AMBER_PLUGIN_ABI_VERSION).\(AMBER_PLUGIN_ABI_MINOR)")
    }

    @Test func aNameTakenByTheHostIsRefusedNamingBothSources() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plugin = try samplePlugin("Color", "color.c", in: directory)
        let registry = Registry()
        try registry.register(Transformer(name: "ColorToData", from: "Binary", to: "Binary", source: "the host program",
                                          forward: { $0 }, reverse: { $0 }))
        #expect(amberError { try registry.loadPlugin(at: plugin) }?.description
            == "\(plugin): transformer \"ColorToData\": the name is already registered by the host program")
        #expect(registry.structClass(named: "Color") == nil, "the plugin's class was not kept either")
        // Loading the same plugin twice: the second load finds its own names taken.
        let fresh = Registry()
        try fresh.loadPlugin(at: plugin)
        #expect(amberError { try fresh.loadPlugin(at: plugin) }?.description
            == "\(plugin): value class \"Color\": the name is already registered by libcolor.so")
    }

    @Test func writableByOthersMissingOrNotAFileIsRefused() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plugin = try samplePlugin("Color", "color.c", in: directory)
        chmod(plugin, 0o775)
        #expect(amberError { try Registry().loadPlugin(at: plugin) }?.description
            == "\(plugin): is writable by group or others (mode 775); refusing to load it")
        chmod(plugin, 0o755)
        try Registry().loadPlugin(at: plugin)
        #expect(amberError { try Registry().loadPlugin(at: directory.path) }?.description == "\(directory.path): not a regular file")
        #expect(amberError { try Registry().loadPlugin(at: "/nonexistent.so") }?.description == "/nonexistent.so: no such file")
        let garbage = directory.appendingPathComponent("garbage.so").path
        try Data("not an ELF file".utf8).write(to: URL(fileURLWithPath: garbage))
        chmod(garbage, 0o644)
        #expect(amberError { try Registry().loadPlugin(at: garbage) }?.description.contains("cannot be loaded:") == true)
    }

    @Test func aDirectoryLoadsEveryPluginInNameOrder() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try samplePlugin("Color", "color.c", in: directory)
        _ = try samplePlugin("Rect", "rect.c", in: directory)
        let loaded = try Registry().loadPlugins(inDirectory: directory.path)
        #expect(loaded.map(\.name) == ["color", "rect"])
    }
}

@Suite struct BytePathTests {
    static func colorBytes(_ r: Float, _ g: Float, _ b: Float, _ a: Float) -> [UInt8] {
        withUnsafeBytes(of: (r, g, b, a)) { Array($0) }
    }

    /// The byte path of a plugin (color, with forward_bytes) and of one
    /// without it (rect, through its value functions) give exactly what the
    /// value path gives, byte for byte, over random values.
    @Test func bytesRoundTripAndAgreeWithTheValuePath() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let registry = Registry()
        try registry.loadPlugin(at: try samplePlugin("Color", "color.c", in: directory))
        try registry.loadPlugin(at: try samplePlugin("Rect", "rect.c", in: directory))
        let color = try registry.transformer(named: "ColorToData")
        #expect(color.inputClass == "Color" && color.outputClass == "Binary" && color.inputSize == 16 && color.outputSize == nil)
        var generator = SplitMix64(seed: 42)
        for _ in 0..<500 {
            let input = Self.colorBytes(.random(in: -1e6...1e6, using: &generator), .random(in: 0...1, using: &generator),
                                        -0.0, .greatestFiniteMagnitude)
            var stored = [UInt8](repeating: 0, count: 32), back = [UInt8](repeating: 0, count: 16)
            let written = try input.withUnsafeBytes { i in try stored.withUnsafeMutableBytes { try color.forward(bytes: i, into: $0) } }
            #expect(written == 16)
            let viaValues = try color.forward(.custom(CustomValue(className: "Color", bytes: Data(input))))
            #expect(viaValues == .binary(Data(stored[0..<16])))
            let read = try stored[0..<16].withUnsafeBytes { s in try back.withUnsafeMutableBytes { try color.reverse(bytes: s, into: $0) } }
            #expect(read == 16 && back == input)
        }
        let rect = try registry.transformer(named: "RectToString")
        var text = [UInt8](repeating: 0, count: 64)
        #expect(amberError {
            _ = try [UInt8](repeating: 0, count: 32).withUnsafeBytes { i in
                try text.withUnsafeMutableBytes { try rect.forward(bytes: i, into: $0) }
            }
        }?.description.contains("only struct, opaque and Binary values have bytes") == true)
    }

    /// Sizes are checked on every byte call, both ways, and lies are caught.
    @Test func sizesAndLiesAreCheckedOnEveryByteCall() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let colors = Registry(), liars = Registry()
        try colors.loadPlugin(at: try samplePlugin("Color", "color.c", in: directory))
        let source = repositoryRoot.appendingPathComponent("Tests/PluginCorpus/LoadsButMisbehaves/misbehaving.c").path
        try liars.loadPlugin(at: try compilePlugin([source], named: "libmisbehaving", in: directory, warnings: ["-w"]))
        func call(_ name: String, reverse: Bool = false, input: Int, output: Int) -> String? {
            var buffer = [UInt8](repeating: 0, count: output)
            return amberError {
                let transformer = try (name == "ColorToData" ? colors : liars).transformer(named: name)
                _ = try [UInt8](repeating: 1, count: input).withUnsafeBytes { i in
                    try buffer.withUnsafeMutableBytes {
                        reverse ? try transformer.reverse(bytes: i, into: $0) : try transformer.forward(bytes: i, into: $0)
                    }
                }
            }?.description
        }
        #expect(call("ColorToData", input: 12, output: 16)?.contains("forward was given 12 bytes, but Color values have 16") == true)
        #expect(call("ColorToData", reverse: true, input: 16, output: 8)?
            .contains("reverse needs 16 bytes of output for Color, the buffer holds 8") == true)
        #expect(call("LiesAboutSize", reverse: true, input: 16, output: 16)?
            .contains("reverse returned 12 bytes, but it declares Color (16 bytes)") == true)
        #expect(call("LiesAboutSize", input: 16, output: 16)?.contains("reported 17 bytes written to a buffer of 16") == true)
        #expect(call("Complains", input: 4, output: 4) == "Complains: transformer \"Complains\" (libmisbehaving.so) "
            + "forward failed: returned status -3: the byte frobnicator is out of ink")
        // Without byte functions the value path runs, with its class check.
        #expect(call("LiesAboutClass", input: 16, output: 64)?.contains("forward returned String") == true)
    }

    /// A plugin that says it is of minor 1 gets its byte fields ignored, even
    /// if its struct has them: the host reads no field newer than the minor.
    @Test func byteFunctionsOfAnEarlierMinorAreNotRead() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("minor1.c")
        try """
        #include <amber_plugin.h>
        #include <stddef.h>
        static int32_t same(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
            (void)state; *output = *input; output->release = NULL; return AMBER_PLUGIN_OK;
        }
        static int32_t refuse(void *state, const void *input, size_t length, void *output, size_t capacity, size_t *written) {
            (void)state; (void)input; (void)length; (void)output; (void)capacity; (void)written; return -9;
        }
        static const amber_plugin_transformer transformers[] = {
            {"Same", "Binary", "Binary", AMBER_PLUGIN_REVERSIBLE | AMBER_PLUGIN_THREAD_SAFE, same, same, NULL, NULL, refuse, refuse}};
        static const amber_plugin_descriptor descriptor = {sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "minor1", "0",
            sizeof(amber_plugin_class), 0, NULL, sizeof(amber_plugin_transformer), 1, transformers, 1};
        const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) { (void)host; return &descriptor; }
        """.write(to: source, atomically: true, encoding: .utf8)
        let registry = Registry()
        try registry.loadPlugin(at: try compilePlugin([source.path], named: "libminor1", in: directory))
        let same = try registry.transformer(named: "Same")
        var output = [UInt8](repeating: 0, count: 8)
        let written = try [UInt8]([1, 2, 3]).withUnsafeBytes { i in try output.withUnsafeMutableBytes { try same.forward(bytes: i, into: $0) } }
        #expect(written == 3, "the value path ran, not the byte function a minor-1 plugin cannot promise")
        #expect(Array(output.prefix(3)) == [1, 2, 3])
        // A plugin that hands back its input's own bytes: the host copies them while they are still there.
        #expect(try same.forward(.binary(Data([1, 2, 3]))) == .binary(Data([1, 2, 3])))
    }

    /// A thread that ends holding a plugin's message (reported during a load
    /// that then succeeded) leaves no trace: the hot path's check stays one load.
    @Test func messagesOfAThreadThatEndsAreForgotten() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("chatty.c")
        try """
        #include <amber_plugin.h>
        #include <stddef.h>
        static const amber_plugin_descriptor descriptor = {sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "chatty", "0",
            sizeof(amber_plugin_class), 0, NULL, sizeof(amber_plugin_transformer), 0, NULL, AMBER_PLUGIN_ABI_MINOR};
        const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) {
            host->report_error(host, "just saying");
            return &descriptor;
        }
        """.write(to: source, atomically: true, encoding: .utf8)
        let plugin = try compilePlugin([source.path], named: "libchatty", in: directory)
        let before = PluginReports.threadsHoldingMessages
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            _ = try? Registry().loadPlugin(at: plugin)
            done.signal()
        }
        thread.start()
        done.wait()
        // The thread's key destructor runs as it exits, just after the signal. Other
        // tests' calls may hold messages for a moment too, hence at most, and a wait.
        var waited = 0
        while PluginReports.threadsHoldingMessages > before && waited < 200 {
            usleep(5_000)
            waited += 1
        }
        #expect(PluginReports.threadsHoldingMessages <= before)
    }

    /// A Swift transformer with byte functions: its bytes are used as given, and checked.
    @Test func swiftByteFunctionsAreCalledAndChecked() throws {
        let registry = Registry()
        try registry.declare(.opaque(name: "Pair", size: 2))
        try registry.register(Transformer(
            name: "Swap", from: "Pair", to: "Pair",
            forward: { value in value }, reverse: { value in value },
            forwardBytes: { input, output in
                output[0] = input[1]
                output[1] = input[0]
                return 2
            },
            reverseBytes: { _, _ in 1 }))
        let swap = try registry.transformer(named: "Swap")
        var output: [UInt8] = [0, 0]
        let written = try [UInt8]([1, 2]).withUnsafeBytes { i in try output.withUnsafeMutableBytes { try swap.forward(bytes: i, into: $0) } }
        #expect(written == 2 && output == [2, 1])
        #expect(amberError {
            _ = try [UInt8]([1, 2]).withUnsafeBytes { i in try output.withUnsafeMutableBytes { try swap.reverse(bytes: i, into: $0) } }
        }?.description.contains("reverse returned 1 bytes, but it declares Pair (2 bytes)") == true)
    }
}

@Suite struct PluginCallTimeTests {
    @Test func liesAndFailuresAreCaughtOnEveryCall() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = repositoryRoot.appendingPathComponent("Tests/PluginCorpus/LoadsButMisbehaves/misbehaving.c").path
        let registry = Registry()
        try registry.loadPlugin(at: try compilePlugin([source], named: "libmisbehaving", in: directory, warnings: ["-w"]))
        let model = try Model(ModelDescription {
            EntityDescription("Thing") {
                Attribute.transformable("a", valueClass: "Color", transformers: ["LiesAboutClass"])
                Attribute.transformable("b", valueClass: "Color", transformers: ["LiesAboutSize"])
                Attribute.transformable("c", valueClass: "Binary", transformers: ["Complains"])
            }
        }, registry: registry)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        let thing = try context.insert("Thing")
        let color = try #require(registry.structClass(named: "Color")).value(["r": 1, "g": 1, "b": 1, "a": 1])
        try thing.setValue(color, forKey: "a")
        try thing.setValue(color, forKey: "b")
        try thing.setValue(.binary(Data([1])), forKey: "c")
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else {
            Issue.record("the save should fail")
            return
        }
        #expect(problems.map(\.description).map { $0.components(separatedBy: ": ").dropFirst().joined(separator: ": ") } == [
            "Thing.a: transformer \"LiesAboutClass\" (libmisbehaving.so) forward returned String \"surprise\", but it declares Binary",
            "Thing.c: transformer \"Complains\" (libmisbehaving.so) forward failed: returned status -7: the frobnicator is out of ink",
        ])
        #expect(try Context(store: store).count(FetchRequest("Thing")) == 0)
        // Store b alone; its reverse returns 12 bytes for a 16-byte Color.
        try thing.setValue(.null, forKey: "a")
        try thing.setValue(.null, forKey: "c")
        try context.save()
        let reader = Context(store: store)
        let error = amberError { _ = try reader.fetch("Thing")[0].value(forKey: "b") }
        // A fetched row decodes through the plugin's byte function, which is checked as strictly.
        #expect(error?.description.contains("reverse returned 12 bytes, but it declares Color (16 bytes)") == true, "\(String(describing: error))")
        // An object with its own values decodes its stored value through the same byte function,
        // and catches the same lie in the same words.
        let changed = try reader.fetch("Thing")[0]
        try changed.setValue(.null, forKey: "c")
        let valuePathError = amberError { _ = try changed.value(forKey: "b") }
        #expect(valuePathError?.description.contains("reverse returned 12 bytes, but it declares Color (16 bytes)") == true,
                "\(String(describing: valuePathError))")
        // So does a direct reverse of the stored bytes through the public value API.
        let stored = try registry.transformer(named: "LiesAboutSize").forward(color)
        let directError = amberError { _ = try registry.transformer(named: "LiesAboutSize").reverse(stored) }
        #expect(directError?.description.contains("reverse returned 12 bytes, but it declares Color (16 bytes)") == true,
                "\(String(describing: directError))")
    }
}
