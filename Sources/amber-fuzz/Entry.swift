import Foundation

// Built by scripts/fuzz.sh with -sanitize=fuzzer,address and -DAMBER_FUZZING:
// libFuzzer supplies main and calls this with each input. Built plainly (as
// `swift build` does), the program replays files instead: `amber-fuzz
// TARGET FILE|DIRECTORY…`, which the test command uses to run the corpora.

#if AMBER_FUZZING
/// libFuzzer's entry: one input for the harness AMBER_FUZZ_TARGET names.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.selected.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#else
@main
struct Replay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            FileHandle.standardError.write(Data("usage: amber-fuzz TARGET FILE|DIRECTORY… (targets: \(FuzzTarget.names))\n".utf8))
            exit(2)
        }
        var count = 0
        for path in arguments.dropFirst() {
            for file in files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("amber-fuzz: cannot read \(file)\n".utf8))
                    exit(1)
                }
                data.withUnsafeBytes { target.run($0) }
                count += 1
            }
        }
        guard count > 0 else {
            FileHandle.standardError.write(Data("amber-fuzz: no inputs in \(arguments.dropFirst().joined(separator: " "))\n".utf8))
            exit(1)
        }
        print("\(target.rawValue): \(count) inputs replayed")
    }

    /// `path` itself, or the files directly inside it.
    private static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { (path as NSString).appendingPathComponent($0) }
    }
}
#endif
