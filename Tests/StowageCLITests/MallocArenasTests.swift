import Testing

@testable import StowageCLI

/// `stowage proxy` limits glibc's malloc arenas to one per core unless its environment sets a limit.
@Suite struct MallocArenasTests {
    @Test("one arena per core by default; MALLOC_ARENA_MAX or an arena_max tunable is left to glibc")
    func arenaLimit() {
        #expect(MallocArenas.limit(environment: [:], cores: 2) == 2)
        #expect(MallocArenas.limit(environment: [:], cores: 16) == 16)
        #expect(MallocArenas.limit(environment: [:], cores: 0) == 1)
        #expect(MallocArenas.limit(environment: ["MALLOC_ARENA_MAX": "8"], cores: 2) == nil)
        #expect(MallocArenas.limit(environment: ["GLIBC_TUNABLES": "glibc.malloc.arena_max=4"], cores: 2) == nil)
    }

    @Test("a limit glibc would not take (not a positive number) leaves the proxy's own in force")
    func unusableLimitsAreIgnored() {
        // glibc (2.36) ignores a value whose leading number (strtoul's, base 0) is missing or 0,
        // and runs with its default of 8 arenas per core: the proxy's limit must then still apply.
        for value in ["", "0", "abc", " ", "0x", "09", "-0"] {
            #expect(MallocArenas.limit(environment: ["MALLOC_ARENA_MAX": value], cores: 2) == 2, "\(value)")
        }
        for tunables in [
            "glibc.malloc.arena_max=", "glibc.malloc.arena_max=0", "glibc.malloc.arena_max=many",
            "glibc.malloc.arena_test=2", "glibc.malloc.check=3",
        ] {
            #expect(MallocArenas.limit(environment: ["GLIBC_TUNABLES": tunables], cores: 2) == 2, "\(tunables)")
        }
        // What glibc takes stays glibc's: its leading number ("4x" is 4 arenas, "010" 8, " 3" 3),
        // even "-1" (no limit: it wraps).
        for value in ["0x4", "010", "4x", " 3", "-1", "+2"] {
            #expect(MallocArenas.limit(environment: ["MALLOC_ARENA_MAX": value], cores: 2) == nil, "\(value)")
        }
        let both = "glibc.malloc.check=3:glibc.malloc.arena_max=4:glibc.malloc.tcache_count=0"
        #expect(MallocArenas.limit(environment: ["GLIBC_TUNABLES": both], cores: 2) == nil)
    }
}
