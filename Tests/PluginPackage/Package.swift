// swift-tools-version:6.0
import PackageDescription

// A package of its own that uses Amber as an app's package would: the
// AmberGenerate plugin makes typed classes from the model files in its target
// at build time. scripts/test.sh builds and runs it from a copy that names
// Amber's folder `amber` (a path dependency's package name is its folder's).
let package = Package(
    name: "Shelf",
    dependencies: [
        .package(path: "../amber"),
    ],
    targets: [
        .executableTarget(name: "Shelf", dependencies: [.product(name: "Amber", package: "Amber")],
                          plugins: [.plugin(name: "AmberGenerate", package: "Amber")]),
    ]
)
