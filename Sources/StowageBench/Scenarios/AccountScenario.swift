import Foundation
import StowageCache
import StowageCore
import StowagePreferences
import StowageStores

/// `account.report`: the storage account of a container holding 100,000 cache entries across
/// two disk caches (50,000 file-backed 2 KiB images, 50,000 inline 300-byte API responses, a
/// tenth of them expired), plus a preference suite and temporary files.
///
/// Baseline: walking the whole container with the disk-usage scanner (`DiskUsage.measure`, as
/// fast as `du`), the only other way to learn where the space went. `ok` means the account's
/// logical bytes for the caches equal what was written, and its allocated estimate is within
/// 5 % of the walk's figure for the caches location.
struct AccountScenario: Scenario {
    let name = "account.report"

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        BenchContext.progress("preparing the account fixture (first run only; 100k cache entries)…")
        let root = try makeFixture(at: context.fixtures.appending(path: "account-100k"))
        let container = Container(root: root)
        let accountant = StorageAccountant(container: container)
        let repetitions = max(context.iterations, 3)

        var account: StorageAccount?
        var accountTimes: [Double] = []
        var walkTimes: [Double] = []
        var cachesWalk = ByteCount.zero
        for _ in 0..<repetitions {
            let clock = ContinuousClock()
            var start = clock.now
            account = try await accountant.account()
            accountTimes.append(Subprocess.seconds(clock.now - start))
            start = clock.now
            _ = try await DiskUsage.measure(root)
            walkTimes.append(Subprocess.seconds(clock.now - start))
            cachesWalk = try await DiskUsage.measure(container.url(for: .caches)).allocatedBytes
        }
        guard let account else { throw BenchFailure("no account taken") }
        let caches = account.stores.filter { $0.kind == .diskCache }
        let entries = caches.reduce(0) { $0 + ($1.entries ?? 0) }
        let logical = caches.reduce(Int64(0)) { $0 + $1.logicalBytes.rawValue }
        let allocated = caches.reduce(Int64(0)) { $0 + $1.allocatedBytes.rawValue }
        let expired = caches.reduce(Int64(0)) { $0 + $1.expiredBytes.rawValue }
        let expectedLogical = Int64(50_000 * 2_048 + 50_000 * 300)
        let deviation = abs(Double(allocated - cachesWalk.rawValue)) / Double(cachesWalk.rawValue)
        let ok = entries == 100_000 && logical == expectedLogical && deviation < 0.05
        return ScenarioResult(
            name: name,
            unit: "s",
            stowage: median(accountTimes),
            baselines: ["disk-usage walk": median(walkTimes)],
            ok: ok,
            notes: "\(account.stores.count) stores, \(entries) cache entries, logical \(logical) B (written "
                + "\(expectedLogical)), allocated estimate \(allocated) B vs walk of caches \(cachesWalk.rawValue) B "
                + "(\(String(format: "%.2f", deviation * 100)) % apart), expired \(expired) B"
        )
    }

    private func makeFixture(at root: URL) throws -> URL {
        let marker = root.appending(path: ".complete")
        if FileManager.default.fileExists(atPath: marker.fileSystemPath) { return root }
        if FileManager.default.fileExists(atPath: root.fileSystemPath) {
            try Subprocess.run(["rm", "-rf", root.fileSystemPath])
        }
        let container = Container(root: root)
        var images = DiskCache.Configuration(name: "images")
        images.inlineThreshold = 1_024
        let imageCache = try DiskCache(container: container, name: "images", configuration: images)
        let api = try DiskCache(container: container, name: "api")
        let image = Data(repeating: 0x49, count: 2_048)
        let response = Data(repeating: 0x41, count: 300)
        for index in 0..<50_000 {
            let ttl: Duration? = index % 10 == 0 ? .milliseconds(1) : nil
            try imageCache.setData(image, forKey: "image-\(index)", timeToLive: ttl)
            try api.setData(response, forKey: "GET /items/\(index)", timeToLive: ttl)
        }
        try imageCache.close()
        try api.close()
        let preferences = try Preferences.open(suite: "standard", in: container)
        for index in 0..<100 { try preferences.set(index, for: PreferenceKey<Int>("key\(index)", default: 0)) }
        let temporary = try container.directory(for: .temporary)
        for index in 0..<10 { try Data(count: 10_000).write(to: temporary.appending(path: "t\(index)")) }
        try Data().write(to: marker)
        return root
    }

}
