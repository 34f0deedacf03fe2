// swift-tools-version:6.0
import PackageDescription
import Foundation

// scripts/install.sh sets AMBER_SONAME=1 to give the C library its SONAME,
// libamber.so.0, and a version script that exports only the amber_ functions.
// Kept out of ordinary builds: unsafe flags would stop other packages from
// depending on this one.
let installFlags: [LinkerSetting] = ProcessInfo.processInfo.environment["AMBER_SONAME"] == "1"
    ? [.unsafeFlags(["-Xlinker", "-soname=libamber.so.0",
                     "-Xlinker", "--version-script=\(Context.packageDirectory)/scripts/libamber.map"])]
    : []

let package = Package(
    name: "Amber",
    products: [
        // The Swift library: `import Amber`.
        .library(name: "Amber", targets: ["Amber"]),
        // The shared library for C callers. SwiftPM names it libAmberC.so;
        // scripts/install.sh installs it as libamber.so.0 with that SONAME.
        .library(name: "AmberC", type: .dynamic, targets: ["AmberCAPI"]),
        // The command-line tool.
        .executable(name: "amber", targets: ["amber"]),
        // Runs `amber generate swift` on a target's model files at build time (typed classes).
        .plugin(name: "AmberGenerate", targets: ["AmberGenerate"]),
        // Sample plugins: shared libraries exporting amber_plugin_entry (include/amber_plugin.h).
        .library(name: "AmberColorPlugin", type: .dynamic, targets: ["ColorPlugin"]),
        .library(name: "AmberRectPlugin", type: .dynamic, targets: ["RectPlugin"]),
        .library(name: "AmberDeflatePlugin", type: .dynamic, targets: ["DeflatePlugin"]),
        .library(name: "AmberAESGCMPlugin", type: .dynamic, targets: ["AESGCMPlugin"]),
        .library(name: "AmberBase64Plugin", type: .dynamic, targets: ["Base64Plugin"]),
        // The benchmark: Amber against raw SQLite in the same run.
        .executable(name: "amber-bench", targets: ["amber-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The Swift API reference and articles (Sources/Amber/Amber.docc), built by scripts/docs.sh.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // System SQLite (libsqlite3-dev); no wrapper package.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        // System libpq (libpq-dev): PostgreSQL's own client library, synchronous like the rest of Amber.
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ"),
        // System zlib (zlib1g-dev): inflates the model a Core Data store keeps (raw DEFLATE).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        // System libffi (libffi-dev): lays out struct value classes as the C compiler does.
        .systemLibrary(name: "CFFI", path: "Sources/CFFI"),
        // Makes include/amber.h visible to Swift so `@c @implementation`
        // checks every exported signature against the header.
        .target(name: "AmberHeaders", path: "Sources/AmberHeaders"),
        // include/amber_plugin.h alone, for the loader and for plugins written in Swift.
        .target(name: "AmberPluginABI", path: "Sources/AmberPluginABI"),
        // The core, one target per layer; each imports only the layers below it,
        // so a back-edge (the store reaching into contexts, the model into SQL)
        // does not compile. docs/architecture.md has the picture.
        // Values, value classes, errors and the field-type vocabulary.
        .target(name: "AmberValues", dependencies: ["CFFI", "AmberPluginABI"], path: "Sources/AmberValues"),
        // Transformers, the registry and the plugin loader.
        .target(name: "AmberTransformers", dependencies: ["AmberValues", "AmberPluginABI"], path: "Sources/AmberTransformers"),
        // Model descriptions, binding, and the predicate syntax tree (no SQL).
        .target(name: "AmberModel", dependencies: ["AmberValues", "AmberTransformers"], path: "Sources/AmberModel"),
        // The store contract: what contexts ask of any store (StoreEngine), the public Store
        // handle and its URLs, the row buffer, change sets, merge policies and the history (no SQL).
        .target(name: "AmberStore", dependencies: ["AmberValues", "AmberTransformers", "AmberModel"], path: "Sources/AmberStore"),
        // What SQL stores share: the predicate-to-SQL compiler, fetch queries and the table layout,
        // with what differs between databases named by a dialect (SQLDialect). No driver.
        .target(name: "AmberSQL", dependencies: ["AmberValues", "AmberTransformers", "AmberModel", "AmberStore"],
                path: "Sources/AmberSQL"),
        // The SQLite store: its dialect, every statement it runs and its transactions.
        .target(name: "AmberSQLiteStore", dependencies: ["AmberValues", "AmberTransformers", "AmberModel", "AmberStore", "AmberSQL", "CSQLite", "CZlib"],
                path: "Sources/AmberSQLiteStore"),
        // The PostgreSQL store: its dialect, its libpq connection, its writer and history.
        .target(name: "AmberPostgreSQLStore", dependencies: ["AmberValues", "AmberTransformers", "AmberModel", "AmberStore", "AmberSQL", "CLibPQ"],
                path: "Sources/AmberPostgreSQLStore"),
        // Contexts and objects, and `import Amber` for users (re-exports the layers below).
        .target(name: "Amber", dependencies: ["AmberValues", "AmberTransformers", "AmberModel", "AmberStore", "AmberSQLiteStore", "AmberPostgreSQLStore"],
                path: "Sources/Amber"),
        // Puts back the host's crash signals the Swift runtime took when libamber loaded.
        // AMBER_DWARF4=1 (scripts/test.sh sets it) writes DWARF 4, as Swift does: valgrind
        // cannot read a library that mixes it with clang's default 5.
        .target(name: "AmberHostSignals", path: "Sources/AmberHostSignals",
                cSettings: ProcessInfo.processInfo.environment["AMBER_DWARF4"] == "1" ? [.unsafeFlags(["-gdwarf-4"])] : []),
        .target(name: "AmberCAPI", dependencies: ["Amber", "AmberHeaders", "AmberHostSignals"], path: "Sources/AmberCAPI",
                linkerSettings: installFlags),
        // Typed classes from a model: the Swift, Python and C generators (no SQL, no store).
        .target(name: "AmberCodegen", dependencies: ["AmberValues", "AmberModel", .product(name: "ArgumentParser", package: "swift-argument-parser")],
                path: "Sources/AmberCodegen"),
        // The generator alone (no stores), which the AmberGenerate plugin runs.
        .executableTarget(name: "amber-generate", dependencies: ["AmberCodegen"], path: "Sources/amber-generate"),
        .executableTarget(
            name: "amber",
            dependencies: ["Amber", "AmberCodegen", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/amber"),
        .plugin(name: "AmberGenerate", capability: .buildTool(), dependencies: ["amber-generate"], path: "Plugins/AmberGenerate"),
        .target(name: "ColorPlugin", dependencies: ["AmberPluginABI"], path: "Sources/Plugins/Color"),
        .target(name: "RectPlugin", dependencies: ["AmberPluginABI"], path: "Sources/Plugins/Rect"),
        .target(name: "DeflatePlugin", dependencies: ["AmberPluginABI"], path: "Sources/Plugins/Deflate",
                linkerSettings: [.linkedLibrary("z")]),
        .target(name: "AESGCMPlugin", dependencies: ["AmberPluginABI"], path: "Sources/Plugins/AESGCM",
                linkerSettings: [.linkedLibrary("crypto")]),
        .target(name: "Base64Plugin", dependencies: ["AmberPluginABI"], path: "Sources/Plugins/Base64"),
        // Raw SQLite and raw libpq workloads in C: the baselines the benchmark measures Amber against.
        .target(name: "AmberBenchRaw", dependencies: ["AmberPluginABI", "CSQLite", "CLibPQ"], path: "Sources/AmberBenchRaw",
                linkerSettings: [.linkedLibrary("dl")]),
        .executableTarget(
            name: "amber-bench",
            dependencies: ["Amber", "AmberBenchRaw", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/amber-bench", plugins: ["AmberGenerate"]),
        // libFuzzer harnesses (scripts/fuzz.sh builds them with -sanitize=fuzzer); built plainly, a corpus replayer.
        .target(name: "AmberFuzzDriver", path: "Sources/AmberFuzzDriver"),
        .executableTarget(
            name: "amber-fuzz",
            dependencies: ["Amber", "AmberPluginABI", "AmberTransformers", "AmberValues", "AmberFuzzDriver"],
            path: "Sources/amber-fuzz"),
        // Classes generated at build time by the AmberGenerate plugin from Tests/AmberTypedTests/Library.amber.json.
        .testTarget(name: "AmberTypedTests", dependencies: ["Amber"], path: "Tests/AmberTypedTests", plugins: ["AmberGenerate"]),
        .testTarget(name: "AmberTests", dependencies: ["Amber", "AmberPluginABI", "AmberValues", "AmberTransformers", "AmberModel", "AmberStore", "AmberSQL", "AmberSQLiteStore", "AmberPostgreSQLStore", "CSQLite"], path: "Tests/AmberTests"),
    ]
)
