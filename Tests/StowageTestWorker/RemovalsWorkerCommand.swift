// The removal APIs run in a child process, for tests that mount a tree inside a container in a
// private mount namespace (PrivateMounts) first; each prints its report as one JSON document.
//
//   StowageTestWorker removals clear DIR           DirectoryClearing.clearContents(of: DIR)
//   StowageTestWorker removals wipe ROOT USER      UserSpaces(container: ROOT).wipe(user: USER)
//   StowageTestWorker removals clear-caches ROOT   ClearCaches(container: ROOT).clear()
//   StowageTestWorker removals make-cache DIR      a disk cache in DIR holding one value
//   StowageTestWorker removals relieve ROOT PATH   registers PATH (files older than a day) and
//                                                  runs one StorageMonitor check on a volume
//                                                  that is always short of space: its sweep,
//                                                  then the marked items
//   StowageTestWorker removals remove-all DIR SOURCE [disk|hybrid|http]
//                                                  a disk cache in DIR holding one value (by
//                                                  default; a HybridCache's disk tier, or an
//                                                  HTTPCache holding one response); SOURCE
//                                                  bind-mounted over the value's subdirectory;
//                                                  then that cache's removeAll()
//   StowageTestWorker removals relieve-temporary ROOT  one StorageMonitor check, always short of
//                                                  space, with TemporaryFiles (any age) only
//   StowageTestWorker removals audit ROOT          the container's backup audit
//   StowageTestWorker removals account ROOT        StorageAccountant(container: ROOT).account()
//   StowageTestWorker removals purge-temporary ROOT    TemporaryFiles (any age).purgeNamingSkips():
//                                                  bytes freed and mounts skipped
//   StowageTestWorker removals relieve-cache DIR SOURCE   a disk cache in DIR holding one value; SOURCE
//                                                  bind-mounted over the value's subdirectory;
//                                                  then one StorageMonitor check (always short of
//                                                  space) with that cache only: its skipped mounts
//   StowageTestWorker removals remove-all-file DIR FILE   a disk cache in DIR holding one value; FILE
//                                                  bind-mounted over the value's file; then
//                                                  DiskCache.removeAll()
//   StowageTestWorker removals clear-caches-mounting ROOT NAME SOURCE   ClearCaches' plan; then
//                                                  SOURCE bind-mounted at Library/Caches/NAME; then
//                                                  the planned run (a mount made while it runs)
import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageHousekeeping
import StowageStores
import StowageTestSupport

/// `StowageTestWorker removals …`: `arguments[0]` names the command, as `CommandLine.arguments` would.
enum RemovalsWorkerCommand {
    /// What `relieve` prints: the failures of the monitor's sweep and marked-item purge.
    struct Relief: Encodable {
        var sweepFailures: [String]
        var markedFailures: [String]
        var bytesFreed: ByteCount
    }

    static func run(_ arguments: [String]) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        switch (arguments.count, arguments.dropFirst().first) {
        case (3, "clear"):
            let report = try await DirectoryClearing.clearContents(of: URL(filePath: arguments[2]))
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        case (4, "wipe"):
            let spaces = UserSpaces(container: Container(root: URL(filePath: arguments[2])))
            let report = try await spaces.wipe(user: arguments[3])
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        case (3, "clear-caches"):
            let report = try await ClearCaches(container: Container(root: URL(filePath: arguments[2]))).clear()
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        case (3, "make-cache"):
            let cache = try DiskCache(directory: URL(filePath: arguments[2]))
            _ = try await cache.setData(Data(repeating: 1, count: 50_000), forKey: "kept")
            say("made")
        case (4, "relieve"):
            let purgeable = PurgeableDirectories(container: Container(root: URL(filePath: arguments[2])))
            try await purgeable.register(arguments[3], policy: .olderThan(days: 1))
            let monitor = StorageMonitor(
                purgeable: purgeable,
                capacity: alwaysShortOfSpace
            )
            guard let report = try await monitor.check(timeLimit: .seconds(600)) else { fail("no pressure seen") }
            let relief = Relief(
                sweepFailures: report.sweep?.directories.flatMap { $0.failures.map(\.description) } ?? [],
                markedFailures: report.markedItems?.failures ?? [],
                bytesFreed: report.bytesFreed
            )
            say(String(decoding: try encoder.encode(relief), as: UTF8.self))
        case (4, "remove-all"), (5, "remove-all"):
            let directory = URL(filePath: arguments[2])
            let report: ClearReport
            switch arguments.count == 5 ? arguments[4] : "disk" {
            case "disk":
                let cache = try DiskCache(directory: directory)
                _ = try await cache.setData(Data(repeating: 1, count: 50_000), forKey: "kept")
                // Mounted while the cache is open, after its open collected orphans: the row stays.
                try mountBind(arguments[3], at: try onlyValueDirectory(under: directory))
                report = try await cache.removeAll()
            case "hybrid":
                let disk = try DiskCache(directory: directory)
                let memory = try MemoryCache<String, Data>()
                let cache = HybridCache(memory: memory, disk: disk, serializer: DataSerializer())
                try await cache.setValue(Data(repeating: 1, count: 50_000), forKey: "kept")
                try mountBind(arguments[3], at: try onlyValueDirectory(under: directory))
                report = try await cache.removeAll()
            case "http":
                let cache = try HTTPCache(directory: directory)
                let request = HTTPRequest(method: .get, scheme: "https", authority: "origin.test", path: "/kept")
                let stored = try await cache.respond(to: request) { _, _ in
                    var response = HTTPResponse(status: .ok)
                    response.headerFields[.cacheControl] = "max-age=600"
                    return (response, HTTPBody(bytes: Array(repeating: 1, count: 50_000)))
                }
                _ = try await stored.body.collect(upTo: 1 << 20)
                try mountBind(arguments[3], at: try onlyValueDirectory(under: directory))
                report = try await cache.removeAll()
            case let kind:
                fail("remove-all: unknown kind '\(kind)' (disk, hybrid or http)")
            }
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        case (3, "relieve-temporary"):
            let container = Container(root: URL(filePath: arguments[2]))
            let monitor = StorageMonitor(
                purgeable: nil,
                caches: [TemporaryFiles(container: container, minimumAge: .zero)],
                capacity: alwaysShortOfSpace
            )
            guard let report = try await monitor.check(timeLimit: .seconds(600)) else { fail("no pressure seen") }
            say(String(decoding: try encoder.encode(report.skipped), as: UTF8.self))
        case (3, "audit"):
            let audit = try await Container(root: URL(filePath: arguments[2])).auditBackups()
            say(String(decoding: try encoder.encode(audit), as: UTF8.self))
        case (3, "account"):
            let account = try await StorageAccountant(container: Container(root: URL(filePath: arguments[2]))).account()
            say(String(decoding: try encoder.encode(account), as: UTF8.self))
        case (3, "purge-temporary"):
            let outcome = try await TemporaryFiles(
                container: Container(root: URL(filePath: arguments[2])),
                minimumAge: .zero
            )
            .purgeNamingSkips(PurgeRequest())
            say(String(decoding: try encoder.encode(TemporaryOutcome(outcome)), as: UTF8.self))
        case (4, "relieve-cache"):
            let directory = URL(filePath: arguments[2])
            let cache = try DiskCache(directory: directory)
            _ = try await cache.setData(Data(repeating: 1, count: 50_000), forKey: "kept")
            try mountBind(arguments[3], at: try onlyValueDirectory(under: directory))
            let monitor = StorageMonitor(
                purgeable: nil,
                caches: [cache],
                capacity: alwaysShortOfSpace
            )
            guard let report = try await monitor.check(timeLimit: .seconds(600)) else { fail("no pressure seen") }
            say(String(decoding: try encoder.encode(report.skipped), as: UTF8.self))
        case (4, "remove-all-file"):
            let directory = URL(filePath: arguments[2])
            let cache = try DiskCache(directory: directory)
            _ = try await cache.setData(Data(repeating: 1, count: 50_000), forKey: "kept")
            let valueDirectory = try onlyValueDirectory(under: directory)
            let files = try FileManager.default.contentsOfDirectory(atPath: valueDirectory)
            guard files.count == 1 else { fail("expected one value file: \(files)") }
            try mountBind(arguments[3], at: valueDirectory + "/" + files[0])
            let report = try await cache.removeAll()
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        case (5, "clear-caches-mounting"):
            let container = Container(root: URL(filePath: arguments[2]))
            let (manifest, handlers) = try ClearCaches(container: container).plan()
            let target = container.url(for: .caches).appending(path: arguments[3]).path(percentEncoded: false)
            try mountBind(arguments[4], at: target)
            let report = try await CacheCleaner(container: container, handlers: handlers).run(manifest).report()
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        default:
            fail(
                "usage: StowageTestWorker removals clear DIR | wipe ROOT USER | clear-caches ROOT | make-cache DIR "
                    + "| relieve ROOT PATH | remove-all DIR SOURCE [disk|hybrid|http] | relieve-temporary ROOT "
                    + "| audit ROOT | account ROOT | purge-temporary ROOT | relieve-cache DIR SOURCE "
                    + "| remove-all-file DIR FILE | clear-caches-mounting ROOT NAME SOURCE"
            )
        }
    }

    /// A volume that is always short of space, so that a storage monitor's check always relieves.
    @Sendable
    private static func alwaysShortOfSpace() -> VolumeCapacity {
        VolumeCapacity(
            total: 100 * .gigabyte,
            available: .zero,
            reserves: .init(important: .bytes(.zero), opportunistic: .bytes(.zero))
        )
    }

    /// The one hash subdirectory of the `data/` directory found under `directory` (a disk cache's
    /// own, or the one an HTTP cache keeps its disk tier in), holding the one value stored.
    private static func onlyValueDirectory(under directory: URL) throws -> String {
        let root = directory.path(percentEncoded: false)
        let candidates = (FileManager.default.subpaths(atPath: root) ?? [])
            .filter { ($0 as NSString).lastPathComponent == "data" }
            .map { root + "/" + $0 }
        guard candidates.count == 1 else { fail("expected one data directory under \(root): \(candidates)") }
        let subdirectories = try FileManager.default.contentsOfDirectory(atPath: candidates[0])
        guard subdirectories.count == 1 else { fail("expected one hash subdirectory: \(subdirectories)") }
        return candidates[0] + "/" + subdirectories[0]
    }

    /// What `purge-temporary` prints.
    struct TemporaryOutcome: Encodable {
        var bytesFreed: ByteCount
        var skipped: [ClearReport.Failure]

        init(_ outcome: PurgeOutcome) {
            bytesFreed = outcome.bytesFreed
            skipped = outcome.skipped
        }
    }

    /// `mount --bind SOURCE TARGET`, in this process's mount namespace.
    private static func mountBind(_ source: String, at target: String) throws {
        let process = ChildProcess()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = ["mount", "--bind", source, target]
        try process.run()
        guard process.waitForExitReliably().status == 0 else { fail("mount --bind \(source) \(target) failed") }
    }
}
