import LookoutConfig

/// The YAML config reader: any document loads or is refused with errors that name a line and
/// column; it never traps.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (all, _) = pieces(data, size)
    do {
        _ = try ConfigurationLoader.load(yaml: String(decoding: all, as: UTF8.self), file: "fuzz.yaml")
    } catch {
        _ = error.description
    }
    return 0
}
