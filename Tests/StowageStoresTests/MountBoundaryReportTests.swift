import Foundation
import StowageTestSupport
import Testing

/// The removals that kept a mount but only logged it name it in their reports too, as the walks
/// do ("skipped: another file system"): a disk cache's `removeAll()` (and so clear caches), a
/// user's database removal inside a wipe, the storage monitor's temporary-files tier; a user's
/// directory that is itself a mount point is left whole and named while the rest of the wipe goes
/// on. The measures stay on the location's file system, as `du -x`: the backup audit and the
/// storage account. Each runs in `StowageTestWorker removals` inside a private mount namespace.
@Suite(.enabled(if: PrivateMounts.isAvailable, "needs root to mount in a private mount namespace"))
struct MountBoundaryReportTests {
    @Test("DiskCache.removeAll names a hash subdirectory mounted while the cache was open and keeps its files")
    func diskCacheRemoveAllNamesAMount() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let cache = base.appending(path: "cache").path(percentEncoded: false)
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [],
                command: MountReports.worker(["remove-all", cache, fixture.outside])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            let report = try #require(try MountReports.document(outcome) as? [String: Any], "\(outcome.standardOutput)")
            let skipped = MountReports.entries(report["failures"])
            #expect(skipped.count == 1 && skipped.allSatisfy { $0.message == MountReports.skip }, "\(report)")
            #expect(skipped.first?.path.hasPrefix(cache + "/data/") == true, "\(report)")
            #expect(report["removedCount"] as? Int == 1)
        }
    }

    @Test(
        "HybridCache.removeAll and HTTPCache.removeAll return their disk tier's report, naming the mount",
        arguments: ["hybrid", "http"]
    )
    func tieredRemoveAllNamesAMount(kind: String) async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let cache = base.appending(path: "cache").path(percentEncoded: false)
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [],
                command: MountReports.worker(["remove-all", cache, fixture.outside, kind])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            let report = try #require(try MountReports.document(outcome) as? [String: Any], "\(outcome.standardOutput)")
            let skipped = MountReports.entries(report["failures"])
            #expect(skipped.count == 1 && skipped.allSatisfy { $0.message == MountReports.skip }, "\(report)")
            #expect(skipped.first?.path.hasPrefix(cache + "/") == true, "\(report)")
            #expect(skipped.first?.path.contains("/data/") == true, "\(report)")
        }
    }

    @Test("clear caches names a tree mounted inside a disk cache, whose rows its open dropped")
    func clearCachesNamesAMountInsideADiskCache() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Caches/images/data")
            let cache = fixture.root + "/Library/Caches/images"
            // A cache made before the mount (its directory holds the fixture's own.txt in data/).
            let made = try await PrivateMounts.run(mounts: [], command: MountReports.worker(["make-cache", cache]))
            try #require(made.status == 0, "\(made.standardError)")
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["clear-caches", fixture.root])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            let report = try #require(try MountReports.document(outcome) as? [String: Any], "\(outcome.standardOutput)")
            let failures = ((report["tasks"] as? [[String: Any]]) ?? []).flatMap {
                MountReports.entries($0["failures"])
            }
            #expect(failures.contains { $0.path == fixture.mountPoint && $0.message == MountReports.skip }, "\(report)")
        }
    }

    @Test("a wipe names the mount it left in the user's database directory")
    func wipeNamesTheDatabaseMount() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Application Support/databases/alice")
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["wipe", fixture.root, "alice"])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(fixture.outsideIsIntact)
            let report = try #require(try MountReports.document(outcome) as? [String: Any], "\(outcome.standardOutput)")
            let skipped = MountReports.entries(report["skipped"])
            let databases = fixture.root + "/Library/Application Support/databases/.removing-alice-"
            #expect(skipped.count == 1, "\(report)")
            #expect(
                skipped.allSatisfy {
                    $0.path.hasPrefix(databases) && $0.path.hasSuffix("/mnt") && $0.message == MountReports.skip
                }
            )
            #expect(report["removedDatabase"] as? Bool == true)
        }
    }

    /// What is mounted at the user's directory.
    enum MountKind: String, CaseIterable, Sendable {
        case bind, tmpfs, overlay
        /// `mount --rbind` of a tree with a tmpfs mounted inside it.
        case recursiveBind
    }

    @Test(
        "a user's directory that is itself a mount point stays whole and named; the rest of the wipe goes",
        arguments: MountKind.allCases
    )
    func wipeSkipsAUserDirectoryThatIsAMountPoint(kind: MountKind) async throws {
        try await withTemporaryDirectory { base in
            // alice's data directory holds own.txt; her caches directory is the mount point.
            let fixture = try MountFixture(in: base, directory: "Library/Application Support/users/alice")
            let cachesDirectory = fixture.root + "/Library/Caches/users/alice"
            try FileManager.default.createDirectory(atPath: cachesDirectory, withIntermediateDirectories: true)
            let before = listing(fixture.outside)
            let mounts: [PrivateMounts.Mount]
            var expected = ["/keep.txt", "/deep/keep2.txt"].map { cachesDirectory + $0 }
            switch kind {
            case .bind: mounts = [.bind(fixture.outside, at: cachesDirectory)]
            case .tmpfs:
                mounts = [.tmpfs(at: cachesDirectory, files: ["a.txt"])]
                expected = [cachesDirectory + "/a.txt"]
            case .overlay: mounts = [.overlay(lower: fixture.outside, at: cachesDirectory)]
            case .recursiveBind:
                mounts = [
                    .tmpfs(at: fixture.outside + "/nested", files: ["b.txt"]),
                    .recursiveBind(fixture.outside, at: cachesDirectory),
                ]
                expected.append(cachesDirectory + "/nested/b.txt")
            }
            let outcome = try await PrivateMounts.run(
                mounts: mounts,
                command: MountReports.worker(["wipe", fixture.root, "alice"]),
                expectingAfter: expected
            )
            #expect(outcome.missingAfter.isEmpty, "every mounted file is still there: \(outcome.missingAfter)")
            #expect(outcome.status == 0, "a mount point left in place does not fail the wipe: \(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            #expect(fixture.ownFileIsGone, "the user's other directories are wiped")
            let report = try #require(try MountReports.document(outcome) as? [String: Any], "\(outcome.standardOutput)")
            let skipped = MountReports.entries(report["skipped"])
            #expect(
                skipped.map(\.path) == [cachesDirectory] && skipped.allSatisfy { $0.message == MountReports.skip },
                "\(report)"
            )
            let pending = fixture.root + "/Library/Application Support/Stowage/wipes/alice.json"
            #expect(!FileManager.default.fileExists(atPath: pending), "the wipe finished: no journal is left")
        }
    }

    @Test("mounts appearing while a wipe walks the user's directories are each named once and kept")
    func mountsAppearingMidWipe() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let users = fixture.root + "/Library/Caches/users"
            for index in 0..<600 {
                let sub = users + "/alice/d\(index)/sub"
                try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
                try Data("x".utf8).write(to: URL(filePath: sub + "/file"))
            }
            // Every third `sub`, at its place before the rename or in the tombstone after it.
            let mounter =
                "i=0; while [ $i -lt 600 ]; do for t in '\(users)'/alice/d$i/sub '\(users)'/.wiping-alice-*/d$i/sub; "
                + "do mount --bind '\(fixture.outside)' \"$t\" 2>/dev/null && break; done; i=$((i+3)); done"
            let outcome = try await PrivateMounts.run(
                mounts: [],
                command: [
                    "sh", "-c",
                    "(\(mounter)) & \"$0\" removals wipe '\(fixture.root)' alice; status=$?; wait; "
                        + "echo mounts-left $(grep -c ' \(users)/' /proc/self/mountinfo) >&2; exit $status",
                    TestWorker.url.path(percentEncoded: false),
                ]
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            try #require(outcome.status == 0, "mounts left in place do not fail the wipe: \(outcome.standardError)")
            let report = try #require(try MountReports.document(outcome) as? [String: Any], "\(outcome.standardOutput)")
            let skipped = MountReports.entries(report["skipped"])
            #expect(
                skipped.allSatisfy { $0.message == MountReports.skip && $0.path.hasSuffix("/sub") },
                "\(skipped.prefix(3))"
            )
            #expect(Set(skipped.map(\.path)).count == skipped.count, "each mount is named once")
            let left = outcome.standardError.split(separator: "\n").first { $0.hasPrefix("mounts-left ") }
            #expect(left.map { Int($0.dropFirst("mounts-left ".count)) } == skipped.count, "\(outcome.standardError)")
        }
    }

    @Test(
        "the storage monitor's temporary-files tier names a mount in the temporary location",
        arguments: [false, true]
    )
    func temporaryTierNamesAMount(nested: Bool) async throws {
        try await withTemporaryDirectory { base in
            // The mount point directly in tmp/, or in a directory of tmp/ that goes around it.
            let fixture = try MountFixture(in: base, directory: nested ? "tmp/work" : "tmp")
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["relieve-temporary", fixture.root])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            #expect(fixture.ownFileIsGone)
            let skipped = MountReports.entries(try MountReports.document(outcome))
            #expect(
                skipped.map(\.path) == [fixture.mountPoint] && skipped.allSatisfy { $0.message == MountReports.skip }
            )
        }
    }

    @Test("the backup audit does not count or enter a tree mounted in a location (du -x)")
    func backupAuditStaysOnTheLocationsFileSystem() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["audit", fixture.root])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            let audit = try #require(try MountReports.document(outcome) as? [String: Any], "\(outcome.standardOutput)")
            let documents = try #require(
                (audit["locations"] as? [[String: Any]])?.first { $0["location"] as? String == "documents" },
                "\(audit)"
            )
            let backedUp = try #require(documents["backedUp"] as? [String: Any], "\(documents)")
            // own.txt only: the two files of the mounted tree are another file system's.
            #expect(backedUp["fileCount"] as? Int == 1, "\(documents)")
        }
    }

    @Test("the storage account does not measure a tree mounted in the caches location, and names it")
    func storageAccountStaysOnTheLocationsFileSystem() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Caches")
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["account", fixture.root])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            let account = try #require(
                try MountReports.document(outcome) as? [String: Any],
                "\(outcome.standardOutput)"
            )
            let stores = (account["stores"] as? [[String: Any]]) ?? []
            #expect(!stores.contains { $0["path"] as? String == fixture.mountPoint }, "\(account)")
            #expect(stores.contains { $0["name"] as? String == "caches/own.txt" }, "\(account)")
            let issues = (account["issues"] as? [String]) ?? []
            #expect(issues.contains("\(fixture.mountPoint): \(MountReports.skip)"), "\(account)")
        }
    }
}
