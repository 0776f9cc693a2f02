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
}
