import Foundation
import StowageCore
import StowageTestSupport
import Testing

/// No removal command leaves the file system of the directory it was given, as
/// `rm --one-file-system`: a tree mounted inside a container keeps its files, and the command's
/// `--json` report names the mount point ("skipped: another file system"). Each command runs in a
/// private mount namespace of its own (PrivateMounts), so the test process's mounts never change.
@Suite(.enabled(if: PrivateMounts.isAvailable, "needs root to mount in a private mount namespace"))
struct MountBoundaryCommandTests {
    /// Whether a report's failures (strings, or objects with path and message) name the mount
    /// point as skipped.
    private func namesSkipped(_ failures: Any?, _ path: String) -> Bool {
        let skip = "skipped: another file system"
        if let lines = failures as? [String] { return lines.contains("\(path): \(skip)") }
        if let objects = failures as? [[String: Any]] {
            return objects.contains { $0["path"] as? String == path && $0["message"] as? String == skip }
        }
        return false
    }

    private func stowage(_ arguments: [String]) -> [String] {
        [StowageExecutable.url.path(percentEncoded: false)] + arguments
    }

    @Test("purge --marked: a marked directory holding a bind mount goes, the mounted tree stays and is named")
    func purgeMarkedDirectoryHoldingAMount() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            do {
                try Marks.setPurgeable(true, at: URL(filePath: fixture.directoryPath))
            } catch StowageError.Code.unsupported {
                return  // No user xattrs here: nothing can be marked.
            }
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["purge", "--root", fixture.root, "--marked", "--free", "all", "--json"]),
                expectingAfter: fixture.mountedFiles
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            #expect(outcome.missingAfter.isEmpty)
            #expect(fixture.ownFileIsGone)
            let report = try MountReports.object(outcome)
            #expect(namesSkipped(report["failures"], fixture.mountPoint), "\(report)")
            #expect(outcome.status == 1, "a skipped mount is reported as a partial failure, as rm -x exits 1")
        }
    }

    @Test("purge --marked: a marked mount point is another file system's, never a marked item")
    func purgeMarkedMountPoint() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            do {
                // Seen through the bind mount, the mount point carries the outside tree's mark.
                try Marks.setPurgeable(true, at: URL(filePath: fixture.outside))
            } catch StowageError.Code.unsupported {
                return
            }
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["purge", "--root", fixture.root, "--marked", "--free", "all", "--json"])
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            let report = try MountReports.object(outcome)
            #expect((report["removed"] as? [Any])?.isEmpty == true, "\(report)")
            #expect(namesSkipped(report["failures"], fixture.mountPoint), "\(report)")
        }
    }

    /// The kinds of mount a location may hold.
    enum Kind: String, CaseIterable, Sendable {
        case bind, recursiveBind, tmpfs, overlay
    }

    private func mounts(_ kind: Kind, _ fixture: MountFixture) -> (mounts: [PrivateMounts.Mount], kept: [String]) {
        switch kind {
        case .bind:
            return ([fixture.bind], fixture.mountedFiles)
        case .recursiveBind:
            // The outside tree with a tmpfs mounted inside it, bound with its submounts.
            return (
                [
                    .tmpfs(at: fixture.outside + "/nested", files: ["inner.txt"]),
                    .recursiveBind(fixture.outside, at: fixture.mountPoint),
                ],
                fixture.mountedFiles + [fixture.mountPoint + "/nested/inner.txt"]
            )
        case .tmpfs:
            return ([.tmpfs(at: fixture.mountPoint, files: ["kept.txt"])], [fixture.mountPoint + "/kept.txt"])
        case .overlay:
            // Removing from an overlay whites the file out in the upper layer: it is checked
            // through the overlay, where it would vanish.
            return ([.overlay(lower: fixture.outside, at: fixture.mountPoint)], fixture.mountedFiles)
        }
    }

    @Test("clear PATH leaves every kind of mount inside the directory whole and names it", arguments: Kind.allCases)
    func clearPath(kind: Kind) async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let (mounts, kept) = mounts(kind, fixture)
            let outcome = try await PrivateMounts.run(
                mounts: mounts,
                command: stowage(["clear", fixture.directoryPath, "--json"]),
                expectingAfter: kept
            )
            #expect(outcome.missingAfter.isEmpty, "\(outcome.standardError)")
            #expect(fixture.outsideIsIntact)
            #expect(fixture.ownFileIsGone)
            let report = try MountReports.object(outcome)
            #expect(namesSkipped(report["failures"], fixture.mountPoint), "\(report)")
            #expect(outcome.status == 1)
        }
    }

    @Test("clear --location documents leaves a bind mount inside it whole and names it")
    func clearLocation() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["clear", "--root", fixture.root, "--location", "documents", "--json"]),
                expectingAfter: fixture.mountedFiles
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            #expect(outcome.missingAfter.isEmpty)
            #expect(fixture.ownFileIsGone)
            #expect(namesSkipped(try MountReports.object(outcome)["failures"], fixture.mountPoint))
        }
    }

    @Test("clean: a task whose entries include a mount point leaves it whole and names it")
    func clean() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let manifest = base.appending(path: "clean.json")
            try Data(#"[{"Path": "\#(fixture.directory)", "Entries": ["*"]}]"#.utf8).write(to: manifest)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage([
                    "clean", "--root", fixture.root, "--manifest", manifest.path(percentEncoded: false), "--json",
                ]),
                expectingAfter: fixture.mountedFiles
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            #expect(fixture.ownFileIsGone)
            let tasks = try #require(try MountReports.object(outcome)["tasks"] as? [[String: Any]])
            #expect(tasks.contains { namesSkipped($0["failures"], fixture.mountPoint) }, "\(tasks)")
        }
    }

    @Test("clean: a task whose path is inside a mount is skipped whole and named")
    func cleanInsideMount() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let manifest = base.appending(path: "clean.json")
            try Data(#"[{"Path": "\#(fixture.directory)/mnt/deep", "Entries": ["*"]}]"#.utf8).write(to: manifest)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage([
                    "clean", "--root", fixture.root, "--manifest", manifest.path(percentEncoded: false), "--json",
                ])
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            let tasks = try #require(try MountReports.object(outcome)["tasks"] as? [[String: Any]])
            #expect(tasks.contains { namesSkipped($0["failures"], fixture.mountPoint + "/deep") }, "\(tasks)")
        }
    }

    @Test("purge (sweep) and purge --reset-all leave a bind mount in a registered directory whole and name it")
    func purgeableSweepAndReset() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, daysOld: 30)
            let added = try await StowageExecutable.run([
                "purgeable", "add", fixture.directory, "--policy", "7d", "--root", fixture.root,
            ])
            try #require(added.status == 0, "\(added.standardError)")
            for arguments in [["purge"], ["purge", "--reset-all"]] {
                let outcome = try await PrivateMounts.run(
                    mounts: [fixture.bind],
                    command: stowage(arguments + ["--root", fixture.root, "--json"]),
                    expectingAfter: fixture.mountedFiles
                )
                #expect(fixture.outsideIsIntact, "\(arguments): \(outcome.standardError)")
                #expect(fixture.ownFileIsGone)
                let directories = try #require(try MountReports.object(outcome)["directories"] as? [[String: Any]])
                #expect(directories.contains { namesSkipped($0["failures"], fixture.mountPoint) }, "\(directories)")
            }
        }
    }

    @Test("purge (sweep) of a registered directory that is itself a mount point sweeps nothing and names it")
    func purgeableDirectoryIsAMount() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, daysOld: 30)
            let registered = fixture.directory + "/mnt"
            let added = try await StowageExecutable.run([
                "purgeable", "add", registered, "--policy", "7d", "--root", fixture.root,
            ])
            try #require(added.status == 0, "\(added.standardError)")
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["purge", "--root", fixture.root, "--json"])
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            let directories = try #require(try MountReports.object(outcome)["directories"] as? [[String: Any]])
            #expect(directories.contains { namesSkipped($0["failures"], fixture.mountPoint) }, "\(directories)")
        }
    }

    @Test("report counts a location without the trees mounted inside it, as du -x")
    func reportStaysOnTheFileSystem() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            try Data(repeating: 1, count: 4_000_000).write(to: URL(filePath: fixture.outside + "/big.bin"))
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["report", "--root", fixture.root, "--json"])
            )
            let locations = try #require(
                try MountReports.object(outcome)["locations"] as? [[String: Any]],
                "\(outcome.standardOutput)"
            )
            let documents = try #require(locations.first { $0["location"] as? String == "documents" })
            let usage = try #require(documents["usage"] as? [String: Any])
            let allocated = try #require(usage["allocatedBytes"] as? Int)
            #expect(allocated < 1_000_000, "the mounted 4 MB file is not the location's: \(usage)")
        }
    }

    @Test("clear: mounts appearing on subdirectories while the walk runs are never entered, and each is named")
    func mountsAppearingMidWalk() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            // 600 subdirectories, each with a `sub` directory a mounter binds the outside tree
            // over while `clear` walks: whichever the walk meets first (the mount, or the directory
            // it opened before the mount came) it must not remove the outside tree's files.
            let tree = fixture.directoryPath + "/tree"
            for index in 0..<600 {
                let sub = tree + "/d\(index)/sub"
                try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
                try Data("x".utf8).write(to: URL(filePath: sub + "/file"))
            }
            let mounter =
                "i=0; while [ $i -lt 600 ]; do mount --bind '\(fixture.outside)' '\(tree)'/d$i/sub 2>/dev/null; "
                + "i=$((i+3)); done"
            let outcome = try await PrivateMounts.run(
                mounts: [],
                command: [
                    "sh", "-c",
                    "(\(mounter)) & \"$0\" clear '\(tree)' --json; status=$?; wait; "
                        + "echo mounts-left $(grep -c ' \(tree)/' /proc/self/mountinfo) >&2; exit $status",
                    StowageExecutable.url.path(percentEncoded: false),
                ]
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            let failures = try #require(try MountReports.object(outcome)["failures"] as? [[String: Any]])
            let skipped = failures.filter { $0["message"] as? String == "skipped: another file system" }
            #expect(skipped.count == failures.count, "only mounts are left: \(failures.prefix(3))")
            // Every mount that was made (the rest came after the walk had removed their place)
            // is named once.
            let left = outcome.standardError.split(separator: "\n").first { $0.hasPrefix("mounts-left ") }
            #expect(left.map { Int($0.dropFirst("mounts-left ".count)) } == skipped.count, "\(outcome.standardError)")
        }
    }

    @Test("purge --marked: a marked file bind-mounted from outside is another file system's, named and kept")
    func markedFileOnAnotherMount() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let target = fixture.directoryPath + "/report.pdf"
            try Data("placeholder".utf8).write(to: URL(filePath: target))
            do {
                try Marks.setPurgeable(true, at: URL(filePath: fixture.outsideFiles[0]))
            } catch StowageError.Code.unsupported {
                return
            }
            let outcome = try await PrivateMounts.run(
                mounts: [.bind(fixture.outsideFiles[0], at: target)],
                command: stowage(["purge", "--root", fixture.root, "--marked", "--free", "all", "--json"])
            )
            #expect(fixture.outsideIsIntact, "\(outcome.standardError)")
            let report = try MountReports.object(outcome)
            #expect((report["removed"] as? [Any])?.isEmpty == true, "\(report)")
            #expect(namesSkipped(report["failures"], target), "\(report)")
        }
    }
}
