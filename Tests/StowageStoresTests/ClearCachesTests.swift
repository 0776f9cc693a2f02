import Foundation
import StowageCache
import StowageCore
import StowageHousekeeping
import StowageStores
import Testing

/// Every regular file below `directories`, with its bytes.
func snapshot(_ directories: [URL]) throws -> [String: Data] {
    var files: [String: Data] = [:]
    for directory in directories {
        guard
            let enumerator = FileManager.default.enumerator(
                at: directory,
                includingPropertiesForKeys: [.isRegularFileKey]
            )
        else { continue }
        for case let url as URL in enumerator
        where (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
            files[url.path] = try Data(contentsOf: url)
        }
    }
    return files
}

@Suite("ClearCaches")
struct ClearCachesTests {
    @Test("everything regenerable is emptied in tier order; durable data is left byte for byte")
    func clearsRegenerableOnly() async throws {
        let fixture = try PopulatedContainer()
        try await fixture.populate()
        let container = fixture.container
        try FileManager.default.createDirectory(at: container.url(for: .documents), withIntermediateDirectories: true)
        try Data("my essay".utf8).write(to: container.url(for: .documents).appending(path: "essay.txt"))
        let durable = [
            container.url(for: .documents), container.url(for: .applicationSupport), container.url(for: .preferences),
        ]
        // Application support holds the purgeable registry, which a clear leaves as it is too.
        let before = try snapshot(durable)
        #expect(before.count >= 5)
        // A process that has the disk cache open sees the clear through the index.
        let open = try DiskCache(container: container, name: "images")
        #expect(try await open.usage().count == 13)

        let clearing = ClearCaches(container: container, openStores: OpenStores())
        let plan = try clearing.plan()
        #expect(
            plan.manifest.tasks.map(\.description) == [
                "Path 'tmp'", "Class 'DiskCache'", "Class 'OpenStores'", "Path 'Library/Caches'",
                "Path 'Library/Caches/downloads'",
            ]
        )

        var phases: [CleanPhase] = []
        var report: CleanReport?
        for try await event in try clearing.run() {
            if phases.last != event.phase { phases.append(event.phase) }
            if case .done(let done) = event { report = done }
        }
        let done = try #require(report)
        #expect(phases == [.preCalculating, .cleaning, .postCalculating, .done])
        #expect(done.isComplete, "\(done.tasks.map { "\($0.task): \(String(describing: $0.error)) \($0.failures)" })")
        // The value files, loose files, downloads and temporary files, less what the index grew by:
        // its WAL, and the pages the clearing handle's close() checkpoints into the index file.
        #expect(done.bytesFreed.rawValue >= 100_000)

        #expect(try snapshot(durable) == before)
        #expect(try await open.usage().count == 0)
        #expect(try await open.data(forKey: "large0") == nil)
        let caches = try FileManager.default.contentsOfDirectory(atPath: container.url(for: .caches).path).sorted()
        #expect(caches == ["CACHEDIR.TAG", "downloads", "http", "images"])
        #expect(
            try FileManager.default.contentsOfDirectory(
                atPath: container.url(for: .caches).appending(path: "downloads").path
            ).isEmpty
        )
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.url(for: .temporary).path).isEmpty)

        let account = try await StorageAccountant(container: container).account()
        #expect(account.totals(for: .regenerable).entries == 0)
        #expect(account.totals(for: .durable).stores == 3)
    }

    @Test("a dry run reports what would be freed and removes nothing")
    func dryRun() async throws {
        let fixture = try PopulatedContainer()
        try await fixture.populate()
        let everything = [fixture.root]
        let before = try snapshot(everything)
        let report = try await ClearCaches(container: fixture.container, openStores: OpenStores()).clear(dryRun: true)
        #expect(report.isDryRun && report.bytesFreed.rawValue > 150_000)
        #expect(try snapshot(everything) == before)
    }
}
