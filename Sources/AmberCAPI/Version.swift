import AmberHeaders
import Amber

/// Static storage for the version string handed to C callers: it must outlive
/// every call, so it is allocated once and never freed.
/// `nonisolated(unsafe)`: written once by the lazy initializer, read-only after.
nonisolated(unsafe) private let versionCString: UnsafePointer<CChar> = {
    let utf8 = Array(Amber.version.utf8CString)
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
    buffer.initialize(from: utf8, count: utf8.count)
    return UnsafePointer(buffer)
}()

@c @implementation
public func amber_version() -> UnsafePointer<CChar>? {
    versionCString
}

@c @implementation
public func amber_abi_version() -> Int32 {
    Int32(AMBER_ABI_VERSION)
}
