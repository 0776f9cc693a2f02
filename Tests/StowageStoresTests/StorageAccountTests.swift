import Foundation
import GRDB
import StowageCache
import StowageCore
import StowageDatabase
import StowageHTTPCache
import StowageHousekeeping
import StowagePreferences
import StowageSecrets
import StowageStores
import StowageTestSupport
import Testing

/// A rooted container in a fresh temporary directory, populated by every kind of store.
final class PopulatedContainer: Sendable {
    let scratch: TemporaryDirectory
    let container: Container
    let clock = ManualClock(startingAt: Date(timeIntervalSince1970: 1_900_000_000))
    /// The container's root, removed with the value.
    var root: URL { scratch.url }

    init(_ name: String = #function) throws {
        scratch = try TemporaryDirectory(name)
        container = Container(root: scratch.url, identifier: "org.stowage.tests")
    }

    /// A disk cache `images` with 10 inline and 3 file-backed entries, 2 of the inline ones
    /// expired by `clock`.
    func diskCache() throws -> DiskCache {
        var configuration = DiskCache.Configuration(name: "images")
        configuration.clock = CacheClock { Date(timeIntervalSince1970: 1_800_000_000) }
        let cache = try DiskCache(container: container, name: "images", configuration: configuration)
        for index in 0..<10 {
            try cache.setData(
                Data(repeating: 1, count: 1_000),
                forKey: "small\(index)",
                timeToLive: index < 2 ? .seconds(60) : nil
            )
        }
        for index in 0..<3 { try cache.setData(Data(repeating: 2, count: 50_000), forKey: "large\(index)") }
        return cache
    }

    func populate() async throws {
        _ = try diskCache()
        let caches = try await container.directory(for: .caches)
        try FileManager.default.createDirectory(at: caches.appending(path: "loose"), withIntermediateDirectories: true)
        try Data(count: 5_000).write(to: caches.appending(path: "loose/a.bin"))

        let purgeable = PurgeableDirectories(container: container)
        let downloads = try await purgeable.register("Library/Caches/downloads", policy: .oneWeek)
        for index in 0..<4 { try Data(count: 2_000).write(to: downloads.appending(path: "f\(index)")) }

        let preferences = try await Preferences.open(suite: "settings", in: container)
        try preferences.set(3, for: PreferenceKey<Int>("launches", default: 0))
        try preferences.set("dark", for: PreferenceKey<String>("theme", default: "light"))

        let secrets = try await SecretStore.open(in: container)
        try secrets.set("token-a", service: "api", account: "ada")
        try secrets.set("token-b", service: "api", account: "bob")

        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try db.create(table: "t") { $0.column("x") } }
        let databases = UserDatabases(container: container, migrator: migrator)
        _ = try await databases.database(for: "ada")
        try databases.close("ada")

        let temporary = try await container.directory(for: .temporary)
        try Data(count: 7_000).write(to: temporary.appending(path: "scratch"))

        _ = try HTTPCache(directory: caches.appending(path: "http", directoryHint: .isDirectory))
    }
}

@Suite("StorageAccount")
struct StorageAccountTests {
    @Test("the account is dated by the accountant's clock")
    func datedByClock() async throws {
        let fixture = try PopulatedContainer()
        let accountant = StorageAccountant(container: fixture.container, now: fixture.clock.cacheClock)
        #expect(try await accountant.account().date == fixture.clock.now)
        fixture.clock.advance(by: .seconds(3_600))
        #expect(try await accountant.account().date == fixture.clock.now)
    }

    @Test("every store of a populated container is listed with its category, size, entries and expired bytes")
    func everyStore() async throws {
        let fixture = try PopulatedContainer()
        try await fixture.populate()
        let accountant = StorageAccountant(container: fixture.container, now: fixture.clock.cacheClock)
        let memory = try MemoryCache<String, Data>()
        memory.setValue(Data(count: 300), forKey: "a", cost: 300)
        accountant.register(memory, name: "thumbnails")
        let archiveURL = fixture.root.appending(path: "profile.json")
        try await Archive<[String]>(url: archiveURL).write(["x"])
        accountant.registerArchive(at: archiveURL, name: "profile")

        let account = try await accountant.account()
        #expect(account.issues.isEmpty)
        let byName = Dictionary(uniqueKeysWithValues: account.stores.map { ($0.name, $0) })
        #expect(
            Set(byName.keys) == [
                "caches/images", "caches/loose", "caches/http", "Library/Caches/downloads", "preferences/settings",
                "secrets",
                "database ada", "temporary", "memory/thumbnails", "archive/profile",
            ]
        )

        let images = try #require(byName["caches/images"])
        #expect(images.kind == .diskCache && images.category == .regenerable && images.source == .index)
        #expect(images.entries == 13)
        #expect(images.logicalBytes == ByteCount(10 * 1_000 + 3 * 50_000))
        #expect(images.expiredBytes == ByteCount(2 * 1_000))
        // The index-based estimate is close to what a walk finds (which also counts the data
        // directories, the lock files and CACHEDIR.TAG).
        let walked = try await DiskUsage.measure(try #require(images.path).asFileURL).allocatedBytes
        #expect(images.allocatedBytes <= walked)
        #expect(walked.rawValue - images.allocatedBytes.rawValue < 256 * 1_024)

        #expect(byName["caches/http"]?.kind == .httpCache)
        #expect(byName["caches/http"]?.source == .index)
        #expect(byName["caches/loose"]?.source == .walk)
        #expect(byName["caches/loose"]?.logicalBytes == ByteCount(5_000))
        #expect(byName["Library/Caches/downloads"]?.kind == .purgeableDirectory)
        #expect(byName["Library/Caches/downloads"]?.entries == 4)
        #expect(byName["preferences/settings"]?.entries == 2)
        #expect(byName["preferences/settings"]?.category == .durable)
        #expect(byName["secrets"]?.entries == 2)
        #expect(byName["database ada"]?.category == .durable)
        #expect((byName["database ada"]?.logicalBytes.rawValue ?? 0) > 0)
        #expect(byName["temporary"]?.category == .temporary)
        #expect(byName["temporary"]?.logicalBytes == ByteCount(7_000))
        #expect(byName["memory/thumbnails"]?.logicalBytes == ByteCount(300))
        #expect(byName["memory/thumbnails"]?.entries == 1)
        #expect(byName["archive/profile"]?.category == .durable)

        // Durable first, then regenerable, then temporary.
        let categories = account.stores.map(\.category)
        #expect(
            categories
                == categories.sorted {
                    ["durable", "regenerable", "temporary"].firstIndex(of: $0.rawValue)! < [
                        "durable", "regenerable", "temporary",
                    ].firstIndex(of: $1.rawValue)!
                }
        )
        #expect(account.totals(for: .regenerable).stores == 5)
    }
}

extension String {
    var asFileURL: URL { URL(filePath: self) }
}
