import Foundation
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Removals beside mounts they did not make, as an attacker sets them up: a tree mounted over
/// the name of a leftover `.wiping-` tombstone, a `users` directory replaced by a link to a
/// mounted tree, a mount point the process may not open, a temporary directory holding a mount,
/// a disk cache's hash subdirectory or value file mounted over, and a disk cache mounted over a
/// cache's name between the plan and the run of "clear caches". Each keeps every file of the
/// mounted tree and is named ("skipped: another file system"), as `rm --one-file-system` leaves
/// it. Each runs in `StowageTestWorker removals` inside a private mount namespace (PrivateMounts).
@Suite(.enabled(if: PrivateMounts.isAvailable, "needs root to mount in a private mount namespace"))
struct MountBoundaryAttackerTests {
    @Test("a wipe never empties a tree mounted over a leftover .wiping- tombstone's name, and names it")
    func tombstoneThatIsAMountPoint() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Caches/users/ada")
            let tombstone = fixture.root + "/Library/Caches/users/.wiping-ada-1"
            try FileManager.default.createDirectory(atPath: tombstone, withIntermediateDirectories: true)
            let before = listing(fixture.outside)
            try #require(before.count == 2)
            let outcome = try await PrivateMounts.run(
                mounts: [.bind(fixture.outside, at: tombstone)],
                command: MountReports.worker(["wipe", fixture.root, "ada"]),
                expectingAfter: ["/keep.txt", "/deep/keep2.txt"].map { tombstone + $0 }
            )
            #expect(outcome.missingAfter.isEmpty, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            #expect(outcome.status == 0, "a mount left in place does not fail the wipe: \(outcome.standardError)")
            #expect(fixture.ownFileIsGone, "the user's own caches are wiped")
            let skipped = MountReports.entries(try MountReports.object(outcome)["skipped"])
            #expect(skipped.contains { $0.path == tombstone && $0.message == MountReports.skip }, "\(skipped)")
        }
    }

    @Test("a wipe does not follow a users directory linked to a mounted tree, and names what it left")
    func usersDirectoryLinkedToAMount() async throws {
        try await withTemporaryDirectory { base in
            // The outside tree holds `deep/`: through the link it reads as user "deep"'s caches.
            let fixture = try MountFixture(in: base)
            let caches = fixture.root + "/Library/Caches"
            try FileManager.default.createDirectory(atPath: caches, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: caches + "/users",
                withDestinationPath: fixture.mountPoint
            )
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["wipe", fixture.root, "deep"])
            )
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            let names = try FileManager.default.contentsOfDirectory(atPath: fixture.outside).sorted()
            #expect(names == ["deep", "keep.txt", "nested"], "nothing renamed in the mounted tree")
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let skipped = MountReports.entries(try MountReports.object(outcome)["skipped"])
            #expect(
                skipped.map(\.path) == [caches + "/users/deep"]
                    && skipped.allSatisfy { $0.message == MountReports.skip }
            )
        }
    }

    @Test("the temporary-files tier counts what it freed around a mount in an old directory")
    func temporaryTierCountsWhatItFreedAroundAMount() async throws {
        try await withTemporaryDirectory { base in
            // tmp/work holds own.txt (20,000 bytes) and the mount point: all of tmp/work but the
            // mount goes, and that is space given back.
            let fixture = try MountFixture(in: base, directory: "tmp/work")
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["purge-temporary", fixture.root])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            #expect(fixture.ownFileIsGone)
            let purged = try MountReports.object(outcome)
            let freed = try #require(purged["bytesFreed"] as? Int, "\(purged)")
            #expect(freed >= 20_000, "own.txt's blocks are freed: \(purged)")
            let skipped = (purged["skipped"] as? [[String: Any]]) ?? []
            #expect(skipped.map { $0["path"] as? String } == [fixture.mountPoint], "\(purged)")
        }
    }

    @Test("a storage-pressure purge of a disk cache names the hash subdirectory mounted in it and keeps its files")
    func diskCachePurgeNamesAMount() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let cache = base.appending(path: "cache").path(percentEncoded: false)
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [],
                command: MountReports.worker(["relieve-cache", cache, fixture.outside])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            let skipped = try #require(
                try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [[String: Any]],
                "\(outcome.standardOutput)"
            )
            #expect(skipped.count == 1, "\(skipped)")
            #expect(
                skipped.allSatisfy {
                    ($0["path"] as? String)?.hasPrefix(cache + "/data/") == true
                        && $0["message"] as? String == MountReports.skip
                },
                "\(skipped)"
            )
        }
    }

    @Test("clear caches never opens or empties a disk cache mounted over a cache's name after the plan was made")
    func clearCachesWithACacheMountedAfterThePlan() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Caches")
            let own = fixture.root + "/Library/Caches/images"
            let foreign = base.appending(path: "foreign-cache").path(percentEncoded: false)
            for directory in [own, foreign] {
                let made = try await PrivateMounts.run(
                    mounts: [],
                    command: MountReports.worker(["make-cache", directory])
                )
                try #require(made.status == 0, "\(made.standardError)")
            }
            let before = listing(foreign)
            try #require(!before.isEmpty)
            let outcome = try await PrivateMounts.run(
                mounts: [],
                command: MountReports.worker(["clear-caches-mounting", fixture.root, "images", foreign])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(foreign) == before, "the mounted cache's files are untouched")
            #expect(fixture.ownFileIsGone)
            let tasks = try #require(
                try MountReports.object(outcome)["tasks"] as? [[String: Any]],
                "\(outcome.standardOutput)"
            )
            let failures = tasks.flatMap { ($0["failures"] as? [[String: Any]]) ?? [] }
            #expect(
                failures.contains { $0["path"] as? String == own && $0["message"] as? String == MountReports.skip },
                "\(tasks)"
            )
        }
    }

    @Test("DiskCache.removeAll names a file bind-mounted over a value file and keeps it")
    func removeAllNamesAFileMount() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let cache = base.appending(path: "cache").path(percentEncoded: false)
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [],
                command: MountReports.worker(["remove-all-file", cache, fixture.outsideFiles[0]])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted file is untouched")
            let failures = (try MountReports.object(outcome)["failures"] as? [[String: Any]]) ?? []
            #expect(failures.count == 1, "\(outcome.standardOutput)")
            #expect(
                failures.allSatisfy {
                    ($0["path"] as? String)?.hasPrefix(cache + "/data/") == true
                        && $0["message"] as? String == MountReports.skip
                },
                "\(outcome.standardOutput)"
            )
        }
    }

    @Test("a wipe by an unprivileged user names a mount point it cannot open as another file system's, and finishes")
    func wipeAroundAnUnreadableMountPoint() async throws {
        try await withTemporaryDirectory { base in
            // ada's caches hold a tmpfs owned by root, mode 000 (a volume mounted there by an
            // administrator); the app runs as nobody and owns everything else.
            let fixture = try MountFixture(in: base, directory: "Library/Caches/users/ada")
            for path in [base.path(percentEncoded: false), fixture.root] { chown(path, 65_534, 65_534) }
            let enumerator = FileManager.default.enumerator(atPath: fixture.root)
            while let name = enumerator?.nextObject() as? String { lchown(fixture.root + "/" + name, 65_534, 65_534) }
            let outcome = try await PrivateMounts.run(
                mounts: [.tmpfs(at: fixture.mountPoint, files: ["kept.txt"])],
                command: [
                    "sh", "-c",
                    "chmod 000 \"$1\" && exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" removals wipe "
                        + "\"$2\" ada",
                    TestWorker.url.path(percentEncoded: false), fixture.mountPoint, fixture.root,
                ]
            )
            #expect(outcome.status == 0, "the mount does not make the wipe fail for good: \(outcome.standardError)")
            #expect(fixture.ownFileIsGone)
            let skipped = MountReports.entries(try MountReports.object(outcome)["skipped"])
            #expect(
                skipped.count == 1
                    && skipped.allSatisfy { $0.path.hasSuffix("/mnt") && $0.message == MountReports.skip }
            )
        }
    }
}
