#if canImport(Glibc)
import CStowageMalloc
#endif

/// The number of glibc malloc arenas `stowage proxy` allows itself: one.
///
/// glibc gives a thread that finds the arenas busy an arena of its own, up to 8 per core, and
/// a block freed goes back to the arena it came from: free space in one arena serves no other.
/// The proxy's disk writes wait for their group commit on the blocking lanes (about 33 threads
/// under `Benchmarks/proxy-rss.sh`'s load), so it used 16 arenas on 2 cores, 13 of them small
/// arenas of lane threads holding 150–300 KB each, 1.6 MB of it free; with one arena per core
/// the heap's free space at the end of the run was 3.1–5.3 MB, with one arena 2.2–2.3 MB
/// (`malloc_stats`, 16 MB memory capacity, 2026-11-29), and the peak's growth over idle 1.31×
/// the capacity against 1.37–1.50× (issue 45's bound is 1.25×). The memory level's entries
/// are allocated on whichever thread stores them and freed on another as the level evicts, so
/// each arena's free space is split between many threads' holes; one arena has one set of them.
/// Threads keep their own cache of small blocks (glibc's tcache), so most allocations take no
/// arena lock. `MALLOC_ARENA_MAX` or a `glibc.malloc.arena_max` tunable that glibc takes is
/// left to glibc; one it ignores (no number, or 0: it then runs with 8 arenas per core) is not
/// a limit.
enum MallocArenas {
    /// The limit for a process with `environment`; `nil` when the environment sets one that
    /// glibc takes.
    static func limit(environment: [String: String]) -> Int32? {
        if let value = environment["MALLOC_ARENA_MAX"], glibcTakes(value[...]) { return nil }
        if let tunables = environment["GLIBC_TUNABLES"] {
            for tunable in tunables.split(separator: ":") {
                let parts = tunable.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2, parts[0] == "glibc.malloc.arena_max", glibcTakes(parts[1]) { return nil }
            }
        }
        return 1
    }

    /// Whether glibc takes `value` as an arena limit: it reads the leading number as `strtoul`
    /// does in base 0 (blanks, a sign, `0x` for hexadecimal, `0` for octal; what follows is
    /// ignored) and ignores 0, the result when there is none (glibc 2.36: "abc", "0x" and "09"
    /// leave its default of 8 per core; "4x" is 4, "-1" no limit).
    static func glibcTakes(_ value: Substring) -> Bool {
        var rest = value.drop { $0 == " " || ("\t"..."\r").contains($0) }
        if let sign = rest.first, sign == "+" || sign == "-" { rest = rest.dropFirst() }
        var radix = 10
        if rest.hasPrefix("0x") || rest.hasPrefix("0X"), rest.dropFirst(2).first?.isHexDigit == true {
            radix = 16
            rest = rest.dropFirst(2)
        } else if rest.hasPrefix("0") {
            radix = 8
        }
        let digits = rest.prefix { $0.isASCII && $0.hexDigitValue.map { $0 < radix } == true }
        return digits.contains { $0 != "0" }
    }

    /// Applies ``limit(environment:)`` to this process (Linux with glibc; elsewhere nothing).
    static func apply(environment: [String: String]) {
        #if canImport(Glibc)
        if let limit = limit(environment: environment) { _ = stowage_limit_malloc_arenas(limit) }
        #endif
    }
}
