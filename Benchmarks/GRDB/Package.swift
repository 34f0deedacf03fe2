// swift-tools-version:6.0
import PackageDescription

// The GRDB side of Amber's benchmark: W1-W4 through GRDB's records, run by
// scripts/bench.sh and reported beside Amber's rows as ratios to the same
// run's raw SQLite. A package of its own, so building Amber never builds GRDB.
let package = Package(
    name: "AmberPeerBenchmarks",
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .executableTarget(name: "grdb-bench", dependencies: [.product(name: "GRDB", package: "GRDB.swift")],
                          path: "Sources/grdb-bench"),
    ]
)
