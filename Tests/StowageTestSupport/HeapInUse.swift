import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The bytes glibc's `malloc` has handed out and not taken back, over every arena: for tests of
/// what a cache really holds (issue 45: a cache stays within the memory it was given).
///
/// Read from `malloc_info`'s totals (what the arenas have from the system, less their free
/// chunks, plus the chunks mapped on their own). `mallinfo2` would not do: it reports the main
/// arena only, and Swift's concurrency threads allocate in arenas of their own. Chunks a thread
/// keeps in its `tcache` (at most 7 of each size up to 1 KiB) count as in use, so a figure is
/// within a few hundred KiB. `nil` on other platforms.
public enum HeapInUse {
    /// The bytes in use now, or `nil` where glibc's `malloc_info` is not there.
    public static func bytes() -> Int? {
        #if canImport(Glibc)
        typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
        // RTLD_DEFAULT, a null handle in glibc.
        guard let symbol = dlsym(nil, "malloc_info") else { return nil }
        let mallocInfo = unsafeBitCast(symbol, to: MallocInfo.self)
        // The free space at the top of each arena goes back to the system first: malloc_info
        // does not count it as free, and how much of it is kept varies with what was freed last.
        if let trim = dlsym(nil, "malloc_trim") {
            _ = unsafeBitCast(trim, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        var buffer: UnsafeMutablePointer<CChar>?
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else { return nil }
        let status = mallocInfo(0, stream)
        fclose(stream)
        defer { free(buffer) }
        guard status == 0, let buffer else { return nil }
        return inUse(fromMallocInfo: String(cString: buffer))
        #else
        return nil
        #endif
    }

    /// The bytes in use by the totals of `malloc_info`'s XML (the last of each line, after the
    /// arenas' own): `system current − fast − rest + mmap`.
    static func inUse(fromMallocInfo xml: String) -> Int? {
        func last(_ prefix: String) -> Int? {
            guard let line = xml.split(separator: "\n").last(where: { $0.contains(prefix) }),
                let sizeRange = line.range(of: "size=\"")
            else { return nil }
            return Int(line[sizeRange.upperBound...].prefix { $0.isNumber })
        }
        guard let current = last("<system type=\"current\""), let fast = last("<total type=\"fast\""),
            let rest = last("<total type=\"rest\""), let mapped = last("<total type=\"mmap\"")
        else { return nil }
        return current - fast - rest + mapped
    }
}
