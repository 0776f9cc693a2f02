import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

/// A shared level's options are checked where they are used: a load through the shared level
/// refuses options that would poll it without a pause or lock with a lease already over.
@Suite("SharedTierOptions: validation")
struct SharedTierOptionsTests {
    /// One bad option each, and the name the message must give.
    static let badOptions: [(String, @Sendable (inout SharedTierOptions) -> Void)] = [
        ("loadLockLease", { $0.loadLockLease = .zero }),
        ("loadLockLease", { $0.loadLockLease = .seconds(-1) }),
        ("pollInterval", { $0.pollInterval = .zero }),
        ("maximumPollInterval", { $0.maximumPollInterval = .milliseconds(-5) }),
        ("maximumPollInterval", { $0.maximumPollInterval = .milliseconds(1) }),  // shorter than pollInterval
        ("loadWaitTimeout", { $0.loadWaitTimeout = .seconds(-10) }),
        ("maximumPendingWrites", { $0.maximumPendingWrites = -1 }),
    ]

    @Test("the defaults, a zero wait and zero pending writes pass")
    func soundOptionsPass() throws {
        try SharedTierOptions().validate()
        var options = SharedTierOptions()
        options.loadWaitTimeout = .zero
        options.maximumPendingWrites = 0
        options.pollInterval = .milliseconds(100)
        try options.validate()
    }

    @Test("a bad option is refused with .invalidConfiguration naming it", arguments: 0..<badOptions.count)
    func badOptionRefused(index: Int) throws {
        let (name, damage) = Self.badOptions[index]
        var options = SharedTierOptions()
        damage(&options)
        let error = try #require(throws: StowageError.self) { try options.validate() }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("SharedTierOptions.\(name)"), "\(error.message)")
    }

    @Test("a load through the shared level with a bad option throws before loading", arguments: 0..<badOptions.count)
    func loadRefusesBadOption(index: Int) async throws {
        let (name, damage) = Self.badOptions[index]
        let level = InMemorySharedLevel()
        defer { level.shutDown() }
        let scratch = try TemporaryDirectory()
        var options = SharedTierOptions()
        damage(&options)
        var memory = MemoryCache<String, String>.Configuration(name: "options")
        memory.memoryPressureSource = nil
        let cache = HybridCache(
            memory: try MemoryCache(configuration: memory),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache")),
            serializer: StringSerializer(),
            shared: level.node(),
            configuration: HybridCache.Configuration(sharedLevel: options)
        )
        let error = await #expect(throws: StowageError.self) {
            _ = try await cache.value(forKey: "k") { throw TestFailure("loaded with a bad \(name)") }
        }
        #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
        #expect(error?.message.contains(name) == true)
        // Reads and writes that never wait on another node go on as before.
        try await cache.setValue("v", forKey: "k")
        #expect(try await cache.value(forKey: "k") == "v")
    }
}
