import Foundation
import StowageCore
import StowageTestSupport
import Testing

/// The commands whose removals kept a mount without naming it now name it, in their text and
/// `--json` output, and exit 1 as `rm --one-file-system` does; `purgeable list` measures like
/// `du -x`. Each command runs in a private mount namespace of its own (PrivateMounts).
@Suite(.enabled(if: PrivateMounts.isAvailable, "needs root to mount in a private mount namespace"))
struct MountBoundaryReportCommandTests {
    private func stowage(_ arguments: [String]) -> [String] {
        [StowageExecutable.url.path(percentEncoded: false)] + arguments
    }

    @Test("db remove --json names a mount inside the user's database directory, keeps its files, exits 1")
    func databaseRemoveNamesAMountInside() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Application Support/databases/alice")
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["db", "remove", "--root", fixture.root, "alice", "--json"])
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            #expect(outcome.status == 1, "\(outcome.standardError)")
            let removal = try #require(
                try MountReports.document(outcome) as? [String: Any],
                "\(outcome.standardOutput)"
            )
            #expect(removal["removed"] as? Bool == true)
            let skipped = try #require(removal["skipped"] as? [[String: Any]], "\(removal)")
            let prefix = fixture.root + "/Library/Application Support/databases/.removing-alice-"
            #expect(skipped.count == 1, "\(removal)")
            #expect(
                skipped.allSatisfy {
                    ($0["path"] as? String)?.hasPrefix(prefix) == true
                        && ($0["path"] as? String)?.hasSuffix("/mnt") == true
                        && $0["message"] as? String == MountReports.skip
                },
                "\(removal)"
            )
        }
    }

    @Test("db remove: a user's database directory that is a mount point stays whole, named on stderr, exit 1")
    func databaseRemoveOfAMountPoint() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Application Support/databases/bob")
            let directory = fixture.root + "/Library/Application Support/databases/alice"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let outcome = try await PrivateMounts.run(
                mounts: [.bind(fixture.outside, at: directory)],
                command: stowage(["db", "remove", "--root", fixture.root, "alice"])
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            #expect(outcome.status == 1, "\(outcome.standardError)")
            #expect(outcome.standardError.contains("\(directory): \(MountReports.skip)"), "\(outcome.standardError)")
            #expect(outcome.standardOutput == "kept alice: another file system\n")
            #expect(!fixture.ownFileIsGone, "another user's directory is not touched")
        }
    }

    @Test("clear-caches --json names a tree mounted inside a disk cache")
    func clearCachesNamesAMountInsideADiskCache() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Caches/images/data")
            // A disk cache made before the mount; its open in clear-caches then drops the rows of
            // what the mount hides, so only the cache's own look at its directory can name it.
            let made = try await PrivateMounts.run(
                mounts: [],
                command: [
                    TestWorker.url.path(percentEncoded: false), "removals", "make-cache",
                    fixture.root + "/Library/Caches/images",
                ]
            )
            try #require(made.status == 0, "\(made.standardError)")
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["clear-caches", "--root", fixture.root, "--json"])
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            #expect(outcome.status == 1, "\(outcome.standardError)")
            let report = try #require(try MountReports.document(outcome) as? [String: Any], "\(outcome.standardOutput)")
            let failures = ((report["tasks"] as? [[String: Any]]) ?? []).flatMap {
                ($0["failures"] as? [[String: Any]]) ?? []
            }
            #expect(
                failures.contains {
                    $0["path"] as? String == fixture.mountPoint && $0["message"] as? String == MountReports.skip
                },
                "\(report)"
            )
        }
    }

    @Test("purgeable list --json measures a registered directory like du -x, without the tree mounted in it")
    func purgeableListStaysOnTheFileSystem() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let registered = try await PrivateMounts.run(
                mounts: [],
                command: stowage(["purgeable", "add", "--root", fixture.root, fixture.directory, "--policy", "manual"])
            )
            try #require(registered.status == 0, "\(registered.standardError)")
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["purgeable", "list", "--root", fixture.root, "--json"])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            let rows = try #require(try MountReports.document(outcome) as? [[String: Any]], "\(outcome.standardOutput)")
            let size = try #require(rows.first?["allocatedBytes"] as? Int, "\(rows)")
            // own.txt (20,000 bytes) and two directories; the mounted tree holds 40,000 more.
            #expect(size < 40_000, "\(rows)")
        }
    }

    @Test("purgeable list --json shows a registered directory that is a mount point as skipped, not its size")
    func purgeableListOfAMountPoint() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let path = fixture.directory + "/mnt"
            let registered = try await PrivateMounts.run(
                mounts: [],
                command: stowage(["purgeable", "add", "--root", fixture.root, path, "--policy", "manual"])
            )
            try #require(registered.status == 0, "\(registered.standardError)")
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["purgeable", "list", "--root", fixture.root, "--json"])
            )
            try #require(outcome.status == 0, "\(outcome.standardError)")
            let rows = try #require(try MountReports.document(outcome) as? [[String: Any]], "\(outcome.standardOutput)")
            let row = try #require(rows.first { $0["path"] as? String == path }, "\(rows)")
            // The sweep leaves a mount point whole, so none of its 40,000 bytes is freeable.
            #expect(row["allocatedBytes"] == nil, "\(row)")
            #expect(row["skipped"] as? String == MountReports.skip, "\(row)")
            #expect(fixture.outsideIsIntact)
        }
    }

    @Test(
        "purgeable list and purge agree on a registered link to a mount point and a registered directory under one: skipped, nothing freed"
    )
    func purgeableListAgreesWithPurgeAcrossMounts() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let link = fixture.directory + "/link"
            let under = fixture.directory + "/mnt/deep"
            for path in [link, under] {
                let registered = try await PrivateMounts.run(
                    mounts: [],
                    command: stowage(["purgeable", "add", "--root", fixture.root, path, "--policy", "1d"])
                )
                try #require(registered.status == 0, "\(registered.standardError)")
            }
            try FileManager.default.removeItem(atPath: fixture.root + "/" + link)
            try FileManager.default.createSymbolicLink(atPath: fixture.root + "/" + link, withDestinationPath: "mnt")
            let listed = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["purgeable", "list", "--root", fixture.root, "--json"])
            )
            try #require(listed.status == 0, "\(listed.standardError)")
            let rows = try #require(try MountReports.document(listed) as? [[String: Any]], "\(listed.standardOutput)")
            for path in [link, under] {
                let row = try #require(rows.first { $0["path"] as? String == path }, "\(rows)")
                #expect(row["skipped"] as? String == MountReports.skip && row["allocatedBytes"] == nil, "\(row)")
            }
            // The 30-day-old files behind both are what a 1-day sweep would take, were it to follow.
            let purged = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["purge", "--root", fixture.root, "--json"])
            )
            #expect(fixture.outsideIsIntact, "\(purged.standardOutput)")
            #expect(
                purged.standardOutput.components(separatedBy: MountReports.skip).count - 1 == 2,
                "\(purged.standardOutput)"
            )
        }
    }
}
