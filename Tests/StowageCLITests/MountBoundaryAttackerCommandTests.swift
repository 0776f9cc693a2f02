import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The removal commands beside mounts they did not make, as an attacker sets them up: a tree
/// mounted over a leftover `.removing-` directory's name or at a user's database directory, the
/// databases directory replaced by a link to a mounted tree, a mount point the command may not
/// open, and mount points whose names hold a newline, a backslash or bytes that are not UTF-8.
/// The mounted trees keep every file (none added), and the `--json` and text reports name each
/// mount once, unambiguously. Each command runs in a private mount namespace (PrivateMounts).
@Suite(.enabled(if: PrivateMounts.isAvailable, "needs root to mount in a private mount namespace"))
struct MountBoundaryAttackerCommandTests {
    private func stowage(_ arguments: [String]) -> [String] {
        [StowageExecutable.url.path(percentEncoded: false)] + arguments
    }

    @Test(
        "db remove: a tree mounted over a leftover .removing- directory is never emptied; its user's removal names it",
        arguments: ["ada", "bob"]
    )
    func leftoverThatIsAMountPoint(user: String) async throws {
        try await withTemporaryDirectory { base in
            // bob has a database directory (own.txt in it); ada's interrupted removal left
            // `.removing-ada-1`, and the outside tree is mounted over that name.
            let fixture = try MountFixture(in: base, directory: "Library/Application Support/databases/bob")
            let leftover = fixture.root + "/Library/Application Support/databases/.removing-ada-1"
            try FileManager.default.createDirectory(atPath: leftover, withIntermediateDirectories: true)
            let before = listing(fixture.outside)
            try #require(before.count == 2)
            let outcome = try await PrivateMounts.run(
                mounts: [.bind(fixture.outside, at: leftover)],
                command: stowage(["db", "remove", "--root", fixture.root, user, "--json"]),
                expectingAfter: ["/keep.txt", "/deep/keep2.txt"].map { leftover + $0 }
            )
            #expect(outcome.missingAfter.isEmpty, "\(outcome.standardError)")
            #expect(listing(fixture.outside) == before, "the mounted tree's files are untouched")
            let removal = try MountReports.object(outcome)
            let skipped = (removal["skipped"] as? [[String: Any]]) ?? []
            if user == "ada" {
                // Named to the user whose leftover it is, and the command exits 1 as rm -x does.
                #expect(skipped.count == 1 && skipped.first?["path"] as? String == leftover, "\(removal)")
                #expect(skipped.allSatisfy { $0["message"] as? String == MountReports.skip }, "\(removal)")
                #expect(outcome.status == 1, "\(outcome.standardError)")
            } else {
                // Another user's removal goes on and is complete; the leftover is only logged.
                #expect(removal["removed"] as? Bool == true, "\(removal)")
                #expect(skipped.isEmpty, "\(removal)")
                #expect(outcome.status == 0, "\(outcome.standardError)")
                #expect(fixture.ownFileIsGone)
            }
        }
    }

    @Test("db remove: a user's directory that is a mount point gets no lock file made in it")
    func noLockFileInAMountedUserDirectory() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, directory: "Library/Application Support/databases/bob")
            let directory = fixture.root + "/Library/Application Support/databases/alice"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let outcome = try await PrivateMounts.run(
                mounts: [.bind(fixture.outside, at: directory)],
                command: stowage(["db", "remove", "--root", fixture.root, "alice", "--json"])
            )
            #expect(outcome.status == 1, "\(outcome.standardError)")
            let names = try FileManager.default.contentsOfDirectory(atPath: fixture.outside).sorted()
            #expect(names == ["deep", "keep.txt", "nested"], "nothing is written into the mounted tree")
            let skipped = try #require(try MountReports.object(outcome)["skipped"] as? [[String: Any]])
            #expect(
                skipped.map { $0["path"] as? String } == [directory]
                    && skipped.first?["message"] as? String == MountReports.skip
            )
        }
    }

    @Test("db remove: the databases directory replaced by a link to a mounted tree is not followed into it")
    func databasesDirectoryLinkedToAMount() async throws {
        try await withTemporaryDirectory { base in
            // The outside tree holds `deep/`, which names a user: the link makes it look like
            // the database directory of user "deep".
            let fixture = try MountFixture(in: base)
            let support = fixture.root + "/Library/Application Support"
            try FileManager.default.createDirectory(atPath: support, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: support + "/databases",
                withDestinationPath: fixture.mountPoint
            )
            let before = listing(fixture.outside)
            let outcome = try await PrivateMounts.run(
                mounts: [fixture.bind],
                command: stowage(["db", "remove", "--root", fixture.root, "deep", "--json"])
            )
            #expect(
                listing(fixture.outside) == before,
                "the mounted tree's files are untouched: \(outcome.standardError)"
            )
            let names = try FileManager.default.contentsOfDirectory(atPath: fixture.outside + "/deep")
            #expect(names == ["keep2.txt"], "nothing renamed, locked or added in the mounted tree")
            let skipped = try #require(try MountReports.object(outcome)["skipped"] as? [[String: Any]])
            #expect(skipped.map { $0["path"] as? String } == [support + "/databases/deep"], "\(skipped)")
            #expect(outcome.status == 1)
        }
    }

    @Test("clear: mount points named with a newline and with a backslash are named unambiguously, text and --json")
    func controlCharactersInSkippedPaths() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            // One name holds a newline, the other the two characters backslash and n.
            let newline = fixture.directoryPath + "/a\nb"
            let backslash = fixture.directoryPath + "/a\\nb"
            for path in [newline, backslash] {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
            let mounts: [PrivateMounts.Mount] = [
                .tmpfs(at: newline, files: ["kept.txt"]), .tmpfs(at: backslash, files: ["kept.txt"]),
            ]
            let text = try await PrivateMounts.run(
                mounts: mounts,
                command: stowage(["clear", fixture.directoryPath]),
                expectingAfter: [newline + "/kept.txt", backslash + "/kept.txt"]
            )
            #expect(text.missingAfter.isEmpty && text.status == 1, "\(text.standardError)")
            let lines = text.standardError.split(separator: "\n").map(String.init)
            let shownNewline = "stowage: \(fixture.directoryPath)/a\\nb: \(MountReports.skip)"
            let shownBackslash = "stowage: \(fixture.directoryPath)/a\\\\nb: \(MountReports.skip)"
            #expect(lines.contains(shownNewline) && lines.contains(shownBackslash), "\(lines)")
            let json = try await PrivateMounts.run(
                mounts: mounts,
                command: stowage(["clear", fixture.directoryPath, "--json"])
            )
            let failures = try #require(
                try MountReports.object(json)["failures"] as? [[String: Any]],
                "\(json.standardOutput)"
            )
            #expect(Set(failures.compactMap { $0["path"] as? String }) == [newline, backslash], "\(failures)")
        }
    }

    @Test("purge (sweep) run by an unprivileged user names a mount point it cannot open as another file system's")
    func sweepAroundAnUnreadableMountPoint() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base, daysOld: 30)
            let added = try await StowageExecutable.run([
                "purgeable", "add", fixture.directory, "--policy", "7d", "--root", fixture.root,
            ])
            try #require(added.status == 0, "\(added.standardError)")
            // The app runs as nobody and owns its container; the tmpfs is root's, mode 000.
            chown(fixture.root, 65_534, 65_534)
            let enumerator = FileManager.default.enumerator(atPath: fixture.root)
            while let name = enumerator?.nextObject() as? String { lchown(fixture.root + "/" + name, 65_534, 65_534) }
            let outcome = try await PrivateMounts.run(
                mounts: [.tmpfs(at: fixture.mountPoint, files: ["kept.txt"])],
                command: [
                    "sh", "-c",
                    "chmod 000 \"$1\" && exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" purge "
                        + "--root \"$2\" --json",
                    StowageExecutable.url.path(percentEncoded: false), fixture.mountPoint, fixture.root,
                ],
                expectingAfter: [fixture.mountPoint + "/kept.txt"]
            )
            #expect(outcome.missingAfter.isEmpty, "\(outcome.standardError)")
            #expect(fixture.ownFileIsGone, "\(outcome.standardError)")
            let directories = try #require(try MountReports.object(outcome)["directories"] as? [[String: Any]])
            let failures = directories.flatMap { ($0["failures"] as? [[String: Any]]) ?? [] }
            #expect(
                failures.count == 1 && failures.first?["path"] as? String == fixture.mountPoint
                    && failures.first?["message"] as? String == MountReports.skip,
                "\(failures)"
            )
        }
    }

    @Test("clear: mount points whose names are not UTF-8 are each named, as their bytes, never merged")
    func undecodableMountPointNames() async throws {
        try await withTemporaryDirectory { base in
            let fixture = try MountFixture(in: base)
            let directory = fixture.directoryPath
            // Two names with a byte that is not UTF-8 (0xFF, 0xFE) and one with a real U+FFFD:
            // three mount points, which a look-alike name would show as one.
            let outcome = try await PrivateMounts.run(
                mounts: [],
                command: [
                    "sh", "-c",
                    "cd \"$1\" && for n in $(printf 'a\\377 a\\376 a\\357\\277\\275'); do mkdir \"$n\" && "
                        + "mount --bind \"$2\" \"$n\" || exit 9; done; exec \"$0\" clear \"$1\" --json",
                    StowageExecutable.url.path(percentEncoded: false), directory, fixture.outside,
                ]
            )
            #expect(outcome.status == 1, "\(outcome.standardError)")
            #expect(fixture.outsideIsIntact)
            let failures = try #require(
                try MountReports.object(outcome)["failures"] as? [[String: Any]],
                "\(outcome.standardOutput)"
            )
            let paths = Set(failures.compactMap { $0["path"] as? String })
            #expect(paths == [directory + "/a\\xFF", directory + "/a\\xFE", directory + "/a\u{FFFD}"], "\(failures)")
            #expect(failures.allSatisfy { $0["message"] as? String == MountReports.skip })
        }
    }
}
