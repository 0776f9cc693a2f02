import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageDatabase
import StowageHTTPCache
import StowageHousekeeping
import StowagePreferences
import StowageStores
import StowageTestSupport
import Synchronization
import Testing

/// Sign-out and "clear caches" reach the stores that are open while they run: no handle, in this
/// process or another, serves what was wiped or cleared, and nothing else changes by a byte.
@Suite("Wipes and clears reach open stores")
struct OpenStoresTests {
    private static let name = PreferenceKey<String>("name", default: "")

    private static func hybrid(_ disk: DiskCache) throws -> HybridCache<String> {
        HybridCache(
            memory: try MemoryCache(configuration: .init(costLimit: 1 << 20)),
            disk: disk,
            serializer: StringSerializer()
        )
    }

    /// Runs `StowageTestWorker stores wipe ROOT USER`: the wipe happens in another process.
    private static func wipeInAnotherProcess(root: URL, user: String) throws {
        let process = TestWorker.process("stores", ["wipe", root.path, user])
        try process.run()
        #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
    }

    @Test(
        "a wipe, here or in another process, leaves none of the user's open caches or preferences serving",
        arguments: [false, true]
    )
    func wipeReachesOpenHandles(inAnotherProcess: Bool) async throws {
        let fixture = try PopulatedContainer()
        let spaces = UserSpaces(container: fixture.container)
        let ada = try spaces.space(for: "ada")
        let bob = try spaces.space(for: "bob")
        var adaCaches: [HybridCache<String>] = []
        var bobCaches: [HybridCache<String>] = []
        for (space, caches) in [(ada, 0), (bob, 1)] {
            let cache = try Self.hybrid(try space.diskCache("feed"))
            try await cache.setValue("feed of \(space.user)", forKey: "latest")
            #expect(try await cache.value(forKey: "latest") == "feed of \(space.user)")  // in memory now
            try space.preferences().set(space.user, for: Self.name)
            if caches == 0 { adaCaches.append(cache) } else { bobCaches.append(cache) }
        }
        let adaPreferences = try ada.preferences()
        let bobPreferences = try bob.preferences()
        #expect(adaPreferences[Self.name] == "ada")
        let bobsFiles = try snapshot([bob.cachesDirectory, bob.dataDirectory])

        if inAnotherProcess {
            try Self.wipeInAnotherProcess(root: fixture.root, user: "ada")
        } else {
            try await spaces.wipe(user: "ada")
        }

        #expect(try await adaCaches[0].value(forKey: "latest") == nil)
        #expect(adaCaches[0].disk.isRemoved)
        #expect(adaPreferences[Self.name] == "")
        #expect(adaPreferences.isRemoved)
        let refused = try #require(throws: StowageError.self) { try adaPreferences.set("ada again", for: Self.name) }
        #expect(refused.code == .notFound)
        // Bob's stores serve on, and his files did not change by a byte.
        #expect(try await bobCaches[0].value(forKey: "latest") == "feed of bob")
        #expect(bobPreferences[Self.name] == "bob")
        #expect(try snapshot([bob.cachesDirectory, bob.dataDirectory]) == bobsFiles)
        // Ada signs in again: new, empty stores at the same paths.
        let again = try spaces.space(for: "ada")
        let preferences = try again.preferences()
        #expect(preferences !== adaPreferences)
        #expect(preferences[Self.name] == "")
        try preferences.set("ada 2", for: Self.name)
        #expect(try await again.diskCache("feed").data(forKey: "latest") == nil)
    }

    @Test("clear-caches empties the memory tiers of caches open in the container; durable data is untouched")
    func clearCachesReachesMemoryTiers() async throws {
        let fixture = try PopulatedContainer()
        try await fixture.populate()
        let container = fixture.container
        try FileManager.default.createDirectory(at: container.url(for: .documents), withIntermediateDirectories: true)
        try Data("my essay".utf8).write(to: container.url(for: .documents).appending(path: "essay.txt"))
        let preferences = try await Preferences.open(in: container)
        try preferences.set("kept", for: Self.name)
        let durable = [
            container.url(for: .documents), container.url(for: .applicationSupport), container.url(for: .preferences),
        ]
        let cache = try Self.hybrid(try DiskCache(container: container, name: "feed"))
        try await cache.setValue("cached", forKey: "latest")
        #expect(try await cache.value(forKey: "latest") == "cached")
        let before = try snapshot(durable)

        let report = try await ClearCaches(container: container, openStores: OpenStores()).clear()
        #expect(report.isComplete)

        #expect(try await cache.value(forKey: "latest") == nil)
        #expect(!cache.disk.isRemoved)  // cleared, not removed: it goes on caching
        try await cache.setValue("recached", forKey: "latest")
        #expect(try await cache.value(forKey: "latest") == "recached")
        #expect(try snapshot(durable) == before)
        #expect(preferences[Self.name] == "kept")
    }

    @Test("clear-caches empties an HTTP cache open on disk in the same process: its memory tier serves nothing after")
    func clearCachesReachesAnOpenHTTPCache() async throws {
        let fixture = try PopulatedContainer()
        let container = fixture.container
        let cache = try HTTPCache(directory: container.url(for: .caches).appending(path: "http"))
        let fetches = Atomic<Int>(0)
        let request = HTTPRequest(method: .get, scheme: "https", authority: "origin.test", path: "/kept")
        @Sendable func read() async throws -> [UInt8] {
            let served = try await cache.respond(to: request) { _, _ in
                fetches.add(1, ordering: .relaxed)
                var response = HTTPResponse(status: .ok)
                response.headerFields[.cacheControl] = "max-age=600"
                return (response, HTTPBody(bytes: Array("v\(fetches.load(ordering: .relaxed))".utf8)))
            }
            return try await served.body.collect(upTo: 1 << 20)
        }
        #expect(try await read() == Array("v1".utf8))
        #expect(try await read() == Array("v1".utf8), "a hit")
        #expect(fetches.load(ordering: .relaxed) == 1)

        let report = try await ClearCaches(container: container, openStores: OpenStores()).clear()
        #expect(report.isComplete)

        #expect(try await read() == Array("v2".utf8), "cleared: fetched again")
        #expect(fetches.load(ordering: .relaxed) == 2)
        #expect(try await cache.removeAll().failures.isEmpty)
    }

    @Test(
        "clear-caches empties HTTPCache.shared, the other HTTP caches kept in memory only and standalone MemoryCaches in its process"
    )
    func clearCachesReachesMemoryOnlyCaches() throws {
        // In a worker process: a clear reaches every cache kept in memory in its process, which
        // would empty those of the tests running beside this one.
        let fixture = try PopulatedContainer()
        let output = try runCommand([TestWorker.url.path, "open-stores", "clear-caches", fixture.root.path])
        #expect(
            output.split(separator: "\n") == [
                "before memory-only=hit shared=hit memory-cache=hit",
                "after memory-only=gone shared=gone memory-cache=gone complete=true",
            ],
            "\(output)"
        )
    }
}
