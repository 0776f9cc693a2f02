import Foundation
import StowageTestSupport
import Testing

@testable import StowageCLI

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `stowage proxy` limits glibc's malloc arenas to one unless its environment sets a limit.
@Suite struct MallocArenasTests {
    @Test("one arena by default; MALLOC_ARENA_MAX or an arena_max tunable is left to glibc")
    func arenaLimit() {
        #expect(MallocArenas.limit(environment: [:]) == 1)
        #expect(MallocArenas.limit(environment: ["LANG": "C"]) == 1)
        #expect(MallocArenas.limit(environment: ["MALLOC_ARENA_MAX": "8"]) == nil)
        #expect(MallocArenas.limit(environment: ["GLIBC_TUNABLES": "glibc.malloc.arena_max=4"]) == nil)
    }

    @Test("a limit glibc would not take (not a positive number) leaves the proxy's own in force")
    func unusableLimitsAreIgnored() {
        // glibc (2.36) ignores a value whose leading number (strtoul's, base 0) is missing or 0,
        // and runs with its default of 8 arenas per core: the proxy's limit must then still apply.
        for value in ["", "0", "abc", " ", "0x", "09", "-0"] {
            #expect(MallocArenas.limit(environment: ["MALLOC_ARENA_MAX": value]) == 1, "\(value)")
        }
        for tunables in [
            "glibc.malloc.arena_max=", "glibc.malloc.arena_max=0", "glibc.malloc.arena_max=many",
            "glibc.malloc.arena_test=2", "glibc.malloc.check=3",
        ] {
            #expect(MallocArenas.limit(environment: ["GLIBC_TUNABLES": tunables]) == 1, "\(tunables)")
        }
        // What glibc takes stays glibc's: its leading number ("4x" is 4 arenas, "010" 8, " 3" 3),
        // even "-1" (no limit: it wraps).
        for value in ["0x4", "010", "4x", " 3", "-1", "+2"] {
            #expect(MallocArenas.limit(environment: ["MALLOC_ARENA_MAX": value]) == nil, "\(value)")
        }
        let both = "glibc.malloc.check=3:glibc.malloc.arena_max=4:glibc.malloc.tcache_count=0"
        #expect(MallocArenas.limit(environment: ["GLIBC_TUNABLES": both]) == nil)
    }
}

#if os(Linux)
/// The running proxy keeps to its arena limit: set on the main thread before any other thread
/// allocates (it was set in `run()`, on a thread of Swift's pool that had its arena already).
@Suite(.timeLimit(.minutes(5)))
struct ProxyMallocArenaTests {
    /// Heaps of glibc arenas other than the main one (which grows by `brk`): anonymous mappings
    /// that start on a 64 MiB boundary and, with the inaccessible rest that follows them, span
    /// 64 MiB or more (glibc's `HEAP_MAX_SIZE` on 64-bit; the rest may run on into a neighbour).
    static func arenaHeaps(inMaps maps: String) -> Int {
        var ranges: [(start: UInt64, end: UInt64, anonymous: Bool)] = []
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            let bounds = fields.first?.split(separator: "-") ?? []
            guard bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16)
            else { continue }
            ranges.append((start, end, fields.count < 6 && fields.count >= 5 && fields[4] == "0"))
        }
        let heapSize: UInt64 = 64 << 20
        var count = 0
        for (index, range) in ranges.enumerated() where range.anonymous && range.start % heapSize == 0 {
            var end = range.end
            var next = index + 1
            while next < ranges.count, ranges[next].anonymous, ranges[next].start == end, end - range.start < heapSize {
                end = ranges[next].end
                next += 1
            }
            if end - range.start >= heapSize { count += 1 }
        }
        return count
    }

    /// Arena heaps of a proxy started with `environment` added to the test's (without its own
    /// malloc settings), after it has answered one request.
    private func arenaHeaps(adding environment: [String: String]) async throws -> Int {
        let scratch = try TemporaryDirectory()
        var base = ProcessInfo.processInfo.environment.filter {
            $0.key != "MALLOC_ARENA_MAX" && $0.key != "GLIBC_TUNABLES"
        }
        base.merge(environment) { $1 }
        let start = try await ProxyProcess.start(
            [
                "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1",
                "--cache-dir", scratch.path + "/cache", "--log-level", "error",
            ],
            environment: base
        )
        guard case .listening(let proxy) = start else {
            if case .exited(let outcome) = start {
                throw TestFailure("stowage proxy exited \(outcome.status): \(outcome.standardError)")
            }
            return -1
        }
        // One request (its upstream refuses it) so the event loop and the pool have allocated.
        let url = URL(string: "http://127.0.0.1:\(proxy.port)/a")!
        _ = try? await URLSession.shared.data(from: url)
        let maps = try String(contentsOfFile: "/proc/\(proxy.process.processIdentifier)/maps", encoding: .utf8)
        try await proxy.stop()
        return Self.arenaHeaps(inMaps: maps)
    }

    @Test("stowage proxy runs on the main arena alone; with MALLOC_ARENA_MAX=8 its threads take arenas of their own")
    func proxyUsesOneArena() async throws {
        #expect(try await arenaHeaps(adding: [:]) == 0)
        // The count sees other arenas when there are some: glibc gives each new thread its own
        // until the limit.
        #expect(try await arenaHeaps(adding: ["MALLOC_ARENA_MAX": "8"]) > 0)
    }
}
#endif
