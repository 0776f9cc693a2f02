import Foundation
import StowageCache
import StowageTestSupport
import StowageTesting
import Testing

/// The examples of StowageTesting's article "Testing code that uses Stowage", as written there:
/// they must compile and pass.
@Suite struct TestingArticleExamplesTests {
    @Test func sessionsExpireAfterAnHour() async throws {
        let clock = ManualClock()
        try await withTemporaryDirectory { directory in
            var configuration = DiskCache.Configuration(name: "sessions")
            configuration.clock = clock.cacheClock
            let cache = try DiskCache(directory: directory, configuration: configuration)
            try await cache.setData(Data("token".utf8), forKey: "alice", timeToLive: .seconds(3_600))

            clock.advance(by: .seconds(3_599))
            #expect(try await cache.data(forKey: "alice") != nil)
            clock.advance(by: .seconds(2))
            #expect(try await cache.data(forKey: "alice") == nil)
            try await cache.close()
        }
    }

    @Test func writesMadeDuringAnOutageReachTheOtherNode() async throws {
        let level = InMemorySharedLevel()
        defer { level.shutDown() }
        try await withTemporaryDirectory { directory in
            func node(_ name: String) throws -> HybridCache<String> {
                var memory = MemoryCache<String, String>.Configuration(name: name)
                memory.memoryPressureSource = nil
                return HybridCache(
                    memory: try MemoryCache(configuration: memory),
                    disk: try DiskCache(directory: directory.appending(path: name)),
                    serializer: StringSerializer(),
                    shared: level.node()
                )
            }
            let a = try node("a")
            let b = try node("b")
            let running = Task { try await a.run() }  // a listens for invalidations and recovers
            defer { running.cancel() }

            level.goDown()
            try await a.setValue("v2", forKey: "greeting")  // kept locally, pending
            #expect(a.pendingSharedWrites == 1)
            #expect(try await b.value(forKey: "greeting") == nil)

            level.comeBack()  // a hears that the level is back and sends what it kept
            try await eventually { a.pendingSharedWrites == 0 }
            #expect(try await b.value(forKey: "greeting") == "v2")
        }
    }
}
