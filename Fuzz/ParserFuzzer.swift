// libFuzzer entry point for the Cache-Control and HTTP-date parsers (built by Fuzz/run.sh with
// `swiftc -sanitize=fuzzer,address` together with Sources/StowageHTTPCache/Parsing/*.swift).
// Properties checked on every input: no trap (ASan and Swift's bounds checks catch memory and
// index errors), and the printed Cache-Control parses back to the same directive names.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let text = String(decoding: bytes, as: UTF8.self)
    let parsed = CacheControl(parsing: text)
    _ = (
        parsed.maxAge, parsed.sharedMaxAge, parsed.noCacheFields, parsed.privateFields, parsed.maxStale, parsed.minFresh
    )
    let reparsed = CacheControl(parsing: parsed.description)
    if reparsed.directives.map(\.name) != parsed.directives.map(\.name) {
        fatalError("Cache-Control round trip changed \(parsed.description)")
    }
    if let seconds = HTTPDate.parse(text) {
        if (-62_135_596_800...253_402_300_799).contains(seconds), HTTPDate.parse(HTTPDate.format(seconds)) != seconds {
            fatalError("HTTP-date round trip changed \(seconds)")
        }
    }
    _ = EntityTag.parseList(text)
    return 0
}
