#if canImport(Glibc)
import CStowageMalloc
#endif

/// The number of glibc malloc arenas `stowage proxy` allows itself.
///
/// glibc gives a thread that finds the arenas busy an arena of its own, up to 8 per core, and
/// a block freed goes back to the arena it came from: free space in one arena serves no other.
/// The proxy's disk writes wait for their group commit on the blocking lanes (about 33 threads
/// under `Benchmarks/proxy-rss.sh`'s load), so it used 16 arenas on 2 cores, 13 of them small
/// arenas of lane threads holding 150–300 KB each, 1.6 MB of it free; with one arena per core
/// the heap's free space at the end of the run was 3.1 MB against 5.5 MB (malloc_info, 16 MB
/// memory capacity, 2026-11-29). Only as many threads as there are cores run at once, so one
/// arena per core keeps them from waiting on each other's. `MALLOC_ARENA_MAX` or a
/// `glibc.malloc.arena_max` tunable, when set, is left to glibc.
enum MallocArenas {
    /// The limit for a process with `cores` cores and `environment`; `nil` when the environment
    /// sets one.
    static func limit(environment: [String: String], cores: Int) -> Int32? {
        if environment["MALLOC_ARENA_MAX"] != nil { return nil }
        if let tunables = environment["GLIBC_TUNABLES"], tunables.contains("arena_max") { return nil }
        return Int32(clamping: max(1, cores))
    }

    /// Applies ``limit(environment:cores:)`` to this process (Linux with glibc; elsewhere nothing).
    static func apply(environment: [String: String], cores: Int) {
        #if canImport(Glibc)
        if let limit = limit(environment: environment, cores: cores) { _ = stowage_limit_malloc_arenas(limit) }
        #endif
    }
}
