import Foundation
import PackagePlugin

/// Generates typed classes from the model files in a target, at build time,
/// as Xcode's code generation does for Core Data: `NAME.amber.json` files and
/// `NAME.xcdatamodeld` bundles among the target's files. Each gives `NAME.swift` in the build's own folder, made again
/// whenever the model changes, so the classes are never edited and never stale.
@main
struct AmberGenerate: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let generator = try context.tool(named: "amber-generate").url
        return modelFiles(in: target.sourceFiles.map(\.url)).map { model in
            let name = String(model.lastPathComponent.prefix { $0 != "." })
            let output = context.pluginWorkDirectoryURL.appending(path: "\(name).swift")
            return .buildCommand(
                displayName: "Generating typed classes from \(model.lastPathComponent)",
                executable: generator,
                arguments: ["swift", model.path(percentEncoded: false), "--output", output.path(percentEncoded: false)],
                inputFiles: [model] + filesInside(model),
                outputFiles: [output])
        }
    }

    /// The target's model files, in name order: `.amber.json` files, and the
    /// `.xcdatamodeld` bundles. SwiftPM lists a bundle as one file on Linux
    /// (and may list the files in it), so both are looked for.
    private func modelFiles(in files: [URL]) -> [URL] {
        // By path without a trailing slash: a bundle listed itself and found from a file in it is one model.
        var found: [String: URL] = [:]
        for file in files {
            let model: URL?
            if file.lastPathComponent.hasSuffix(".amber.json") || file.pathExtension == "xcdatamodeld" {
                model = file
            } else {
                model = bundle(holding: file)
            }
            guard let model else { continue }
            var path = model.standardizedFileURL.path(percentEncoded: false)
            while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
            found[path] = URL(fileURLWithPath: path)
        }
        return found.keys.sorted().compactMap { found[$0] }
    }

    /// The `.xcdatamodeld` bundle `file` lies in, if any.
    private func bundle(holding file: URL) -> URL? {
        var folder = file.deletingLastPathComponent()
        while folder.pathComponents.count > 1 {
            if folder.pathExtension == "xcdatamodeld" { return folder }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }

    /// A bundle's files (its versions' `contents`, `.xccurrentversion`), so
    /// editing any of them, or adding a version, regenerates.
    private func filesInside(_ bundle: URL) -> [URL] {
        guard bundle.pathExtension == "xcdatamodeld", let paths = FileManager.default.subpaths(atPath: bundle.path) else { return [] }
        return paths.sorted().map { bundle.appending(path: $0) }.filter { file in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }
}
