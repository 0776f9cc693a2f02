import Foundation
import StowageTestSupport
import Testing

/// Removals outside the walks that FileSystemBoundary first guarded stay on their file system too,
/// as `rm --one-file-system`: a disk cache's orphan collection (on every open) and the removal
/// of a user's database directory (`db remove`, a user wipe) keep every file of a tree mounted
/// inside their directory. Each runs in `StowageTestWorker removals` inside a private mount
/// namespace (PrivateMounts), never in the test process.
@Suite(.enabled(if: PrivateMounts.isAvailable, "needs root to mount in a private mount namespace"))
struct MountBoundaryAttackTests {
    /// Where in the cache's directory the outside tree is mounted.
    enum Place: String, CaseIterable, Sendable {
        case hashSubdirectory = "data/zz"
        case temporary = "tmp"
    }

    @Test("opening a disk cache collects no orphans from a tree mounted inside it", arguments: Place.allCases)
    func openKeepsAMountedTree(place: Place) async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let cache = base.appending(path: "cache").path(percentEncoded: false)
            let made = try await PrivateMounts.run(mounts: [], command: MountReports.worker(["make-cache", cache]))
            try #require(made.status == 0, "\(made.standardError)")
            try FileManager.default.createDirectory(
                atPath: cache + "/" + place.rawValue,
                withIntermediateDirectories: true
            )
            let before = listing(fixture.outside)
            try #require(before.count == 2)
            // Opened again, by the only process using it: everything not indexed is an orphan.
            let outcome = try await PrivateMounts.run(
                mounts: [.bind(fixture.outside, at: cache + "/" + place.rawValue)],
                command: MountReports.worker(["make-cache", cache])
            )
            // The open comes first; the value written after it may fail (a temporary file on
            // the mount cannot be renamed into data/: EXDEV), which is not what is checked here.
            #expect(
                listing(fixture.outside) == before,
                "the mounted tree's files are untouched: \(outcome.standardError)"
            )
        }
    }

    @Test("a user wipe removes the user's database directory around a bind mount inside it, keeping the mount's files")
    func wipeKeepsAMountInTheDatabaseDirectory() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Application Support/databases/alice")
            let before = listing(fixture.outside)
            try #require(before.count == 2)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: MountReports.worker(["wipe", fixture.root, "alice"])
            )
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            #expect(outcome.status == 0, "a mount left in place does not fail the wipe: \(outcome.standardError)")
            #expect(fixture.ownFileIsGone)
        }
    }
}
