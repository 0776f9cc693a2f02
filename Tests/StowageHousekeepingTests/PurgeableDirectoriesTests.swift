import Foundation
import Logging
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHousekeeping

@Suite("purgeable directories")
struct PurgeableDirectoriesTests {
    /// The test's "now": files are dated relative to it and the clock is injected.
    let now: Double = 1_800_000_000

    func purgeable(_ fixture: TestContainer, capOrder: FileTimestamp = .creation) -> PurgeableDirectories {
        let now = self.now
        return PurgeableDirectories(
            container: fixture.container,
            configuration: .init(clock: CacheClock { Date(timeIntervalSince1970: now) }, capOrder: capOrder)
        )
    }

    // MARK: - Registration

    @Test("register creates the directory, returns its URL and persists across instances")
    func registrationPersists() async throws {
        let fixture = try TestContainer()
        let url = try await purgeable(fixture).register(
            "Documents/SomePath",
            policy: .oneWeek,
            sizeCap: 200 * .megabyte
        )
        #expect(url.path(percentEncoded: false).hasSuffix("/Documents/SomePath"))
        #expect(fixture.exists("Documents/SomePath"))

        // A new instance (a later run) reads the registry file.
        let later = purgeable(fixture)
        #expect(
            try await later.registrations() == [
                PurgeableDirectory(path: "Documents/SomePath", policy: .olderThan(days: 7), sizeCap: 200 * .megabyte)
            ]
        )
        // Registering again updates, never duplicates; trailing slashes and "." are normalized.
        try await later.register("Documents/./SomePath/", policy: .manual)
        #expect(try await purgeable(fixture).registrations() == [.init(path: "Documents/SomePath", policy: .manual)])
        let stored = try String(contentsOf: later.registryURL, encoding: .utf8)
        #expect(stored.contains("\"policy\" : \"manual\""))
        #expect(later.registryURL.path.contains("Library/Application Support/Stowage/"))

        #expect(try await later.unregister("Documents/SomePath"))
        #expect(try await later.registrations().isEmpty)
        #expect(fixture.exists("Documents/SomePath"), "unregistering keeps the files")
    }

    @Test(
        "registration refuses paths outside the container",
        arguments: [
            ("/etc", StowageError.Code.pathEscapesRoot), ("Documents/../..", .pathEscapesRoot),
            ("Somewhere/else", .invalidArgument), ("", .invalidArgument),
        ]
    )
    func registrationRefusals(path: String, code: StowageError.Code) async throws {
        let fixture = try TestContainer()
        let error = await #expect(throws: StowageError.self) {
            try await purgeable(fixture).register(path, policy: .oneWeek)
        }
        #expect(error?.code == code)
        #expect(error?.message.contains("'\(path)'") == true)
        #expect(!FileManager.default.fileExists(atPath: purgeable(fixture).registryURL.path))
    }

    @Test("registration refuses a symbolic link leading out of the location")
    func registrationRefusesLinkOut() async throws {
        let fixture = try TestContainer()
        let outside = try TemporaryDirectory()
        try fixture.symlink("Library/Caches/out", to: outside.path)
        let error = await #expect(throws: StowageError.self) {
            try await purgeable(fixture).register("Library/Caches/out/feeds", policy: .oneWeek)
        }
        #expect(error?.code == .pathEscapesRoot)
        #expect(!FileManager.default.fileExists(atPath: outside.url.appending(path: "feeds").path))
    }

    @Test(arguments: [
        ("manual", PurgePolicy.manual), ("0d", .manual), ("7d", .oneWeek), ("3d", .threeDays),
        ("45d", .olderThan(days: 45)),
    ])
    func policyParsing(text: String, policy: PurgePolicy) throws {
        #expect(try PurgePolicy(parsing: text) == policy)
    }

    @Test func badPolicyIsATypedError() {
        #expect(throws: StowageError.self) { try PurgePolicy(parsing: "weekly") }
    }

    @Test("a policy without its unit ('7') is refused, naming the units; a registry's '7' still reads as 7 days")
    func policyWithoutUnitIsRefused() throws {
        let error = #expect(throws: StowageError.self) { try PurgePolicy(parsing: "7") }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("'7d'") == true && error?.message.contains("no unit") == true)
        let stored = try JSONDecoder().decode([PurgePolicy].self, from: Data(#"["7", "7d", "manual"]"#.utf8))
        #expect(stored == [.oneWeek, .oneWeek, .manual])
    }

    // MARK: - Policies

    @Test("each age policy deletes exactly the files older than it", arguments: [3, 7, 14, 30])
    func agePolicy(days: Int) async throws {
        let fixture = try TestContainer()
        let purgeable = purgeable(fixture)
        try await purgeable.register("Library/Caches/feeds", policy: .olderThan(days: days))
        let base = "Library/Caches/feeds"
        try fixture.file("\(base)/young", modified: now - Double(days) * day + 3_600)
        try fixture.file("\(base)/old", modified: now - Double(days) * day - 3_600)
        try fixture.file("\(base)/nested/deep/old", modified: now - 100 * day)
        try fixture.file("\(base)/nested/fresh", modified: now - 60)
        try fixture.symlink("\(base)/link", to: "/etc/hostname")
        try setModificationTime(fixture.url("\(base)/link"), now - 100 * day)

        let report = try await purgeable.sweep()

        #expect(fixture.files(under: base) == ["nested/fresh", "young"])
        #expect(fixture.exists("\(base)/nested/deep"), "directories stay")
        #expect(FileManager.default.fileExists(atPath: "/etc/hostname"), "a link is removed, never followed")
        let directory = try #require(report.directories.first)
        #expect(directory.removedForAge == 3)
        #expect(directory.bytesFreed == ByteCount(2 * 4_096))
        #expect(directory.failures.isEmpty && directory.error == nil)
    }

    @Test("a manual directory is left alone by sweeps and emptied by reset-all and clear")
    func manualPolicy() async throws {
        let fixture = try TestContainer()
        let purgeable = purgeable(fixture)
        try await purgeable.register("Documents/Drafts")
        try await purgeable.register("tmp/uploads", policy: .manual)
        try fixture.file("Documents/Drafts/ancient", modified: now - 1_000 * day)
        try fixture.file("Documents/Drafts/sub/also", modified: now - 1_000 * day)
        try fixture.file("tmp/uploads/part", modified: now - 1_000 * day)

        let sweep = try await purgeable.sweep()
        #expect(sweep.removedCount == 0)
        #expect(fixture.files(under: "Documents/Drafts") == ["ancient", "sub/also"])

        let cleared = try await purgeable.clear("tmp/uploads")
        #expect(cleared.removedByReset == 1)
        #expect(fixture.files(under: "tmp/uploads").isEmpty)
        #expect(fixture.files(under: "Documents/Drafts").count == 2, "clear touches only the named directory")

        let reset = try await purgeable.resetAll()
        #expect(fixture.files(under: "Documents/Drafts").isEmpty)
        #expect(fixture.exists("Documents/Drafts"), "the directory itself stays")
        #expect(reset.directories.map(\.path) == ["Documents/Drafts", "tmp/uploads"])
        #expect(reset.directories[0].removedByReset == 3, "two files and the subdirectory")
        #expect(reset.bytesFreed.rawValue >= 2 * 4_096)
        #expect(try await purgeable.registrations().count == 2, "registrations survive a reset")

        await #expect(throws: StowageError.self) { try await purgeable.clear("Documents/Unregistered") }
    }

    // MARK: - Size cap

    @Test("over its cap a directory loses its oldest files until it is at half the cap")
    func halfCapRule() async throws {
        let fixture = try TestContainer()
        let base = "Library/Caches/images"
        // Ten files of 100 KB created oldest first, each born after the one before; the cap is
        // 600 KB, half is 300 KB.
        var previous: URL?
        for index in 0..<10 {
            let relative = "\(base)/\(index < 5 ? "a" : "b/c")/file\(index)"
            previous =
                try previous.map { try fixture.file(relative, bytes: 100_000, bornAfter: $0) }
                ?? fixture.file(relative, bytes: 100_000)
        }
        let perFile = allocatedBytes(fixture.url("\(base)/a/file0"))
        let birth = hasBirthTime(fixture.root)
        if !birth {
            // Without birth times the order falls back to modification times: make them agree.
            for index in 0..<10 {
                try setModificationTime(
                    fixture.url("\(base)/\(index < 5 ? "a" : "b/c")/file\(index)"),
                    now - Double(100 - index)
                )
            }
        }
        let purgeable = purgeable(fixture)
        try await purgeable.register(base, policy: .manual, sizeCap: ByteCount(6 * perFile))

        let report = try await purgeable.sweep()

        // 10 files are over 6; down to at most 3: the 7 oldest go.
        #expect(fixture.files(under: base) == ["b/c/file7", "b/c/file8", "b/c/file9"])
        let directory = try #require(report.directories.first)
        #expect(directory.removedForCap == 7)
        #expect(directory.remainingBytes == ByteCount(3 * perFile))
        #expect(directory.bytesFreed == ByteCount(7 * perFile))

        // Under the cap now: a second sweep removes nothing.
        #expect(try await purgeable.sweep().removedCount == 0)
    }

    @Test("the cap orders by birth time where the file system has it, not by modification time")
    func capUsesBirthTime() async throws {
        let fixture = try TestContainer()
        try #require(hasBirthTime(fixture.root), "this file system has no birth times")
        let base = "Library/Caches/thumbs"
        // Created first, but modified most recently: by birth time it is the oldest.
        let first = try fixture.file("\(base)/first", bytes: 100_000, modified: now - 10)
        let second = try fixture.file("\(base)/second", bytes: 100_000, modified: now - 1_000, bornAfter: first)
        try fixture.file("\(base)/third", bytes: 100_000, modified: now - 2_000, bornAfter: second)
        let perFile = allocatedBytes(fixture.url("\(base)/first"))

        let byBirth = purgeable(fixture)
        try await byBirth.register(base, sizeCap: ByteCount(2 * perFile + perFile / 2))
        _ = try await byBirth.sweep()
        // 3 files over a 2.5-file cap: down to 1.25 files, so the two oldest by birth go.
        #expect(fixture.files(under: base) == ["third"])

        // With modification order configured, the same layout keeps "first".
        try fixture.file("\(base)/first", bytes: 100_000, modified: now - 10)
        try fixture.file("\(base)/second", bytes: 100_000, modified: now - 1_000)
        let byModification = purgeable(fixture, capOrder: .modification)
        _ = try await byModification.sweep()
        #expect(fixture.files(under: base) == ["first"])
    }

    @Test("age policy and cap together: age first, then the cap on what is left")
    func ageThenCap() async throws {
        let fixture = try TestContainer()
        let base = "Library/Caches/mixed"
        for index in 0..<4 { try fixture.file("\(base)/old\(index)", bytes: 100_000, modified: now - 20 * day) }
        for index in 0..<4 {
            try fixture.file("\(base)/new\(index)", bytes: 100_000, modified: now - Double(4 - index) * 60)
        }
        let perFile = allocatedBytes(fixture.url("\(base)/new0"))
        let purgeable = purgeable(fixture, capOrder: .modification)
        try await purgeable.register(base, policy: .oneWeek, sizeCap: ByteCount(3 * perFile))
        let report = try await purgeable.sweep()
        #expect(report.directories[0].removedForAge == 4)
        #expect(report.directories[0].removedForCap == 3, "4 new files over a 3-file cap: down to 1.5")
        #expect(fixture.files(under: base) == ["new3"])
    }

    // MARK: - Background, cancellation, errors

    @Test("the background sweep returns at once and its task yields the report")
    func backgroundSweep() async throws {
        let fixture = try TestContainer()
        let purgeable = purgeable(fixture)
        try await purgeable.register("Library/Caches/feeds", policy: .threeDays)
        try fixture.file("Library/Caches/feeds/old", modified: now - 4 * day)
        let task = purgeable.sweepInBackground()
        let report = try await task.value
        #expect(report.removedCount == 1)
    }

    @Test("a cancelled sweep stops between files and throws CancellationError")
    func cancelledSweep() async throws {
        let fixture = try TestContainer()
        let purgeable = purgeable(fixture)
        try await purgeable.register("Library/Caches/many", policy: .threeDays)
        try fixture.manyFiles("Library/Caches/many", directories: 20, filesPerDirectory: 100, modified: now - 9 * day)
        let task = Task {
            try await purgeable.sweep()
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(!fixture.files(under: "Library/Caches/many").isEmpty, "cancelled before it reached every file")
    }

    @Test("a directory that cannot be swept is reported and the others are still swept")
    func brokenDirectoryDoesNotStopOthers() async throws {
        let fixture = try TestContainer()
        let purgeable = purgeable(fixture)
        try await purgeable.register("Library/Caches/broken", policy: .threeDays)
        try await purgeable.register("Library/Caches/fine", policy: .threeDays)
        try FileManager.default.removeItem(at: fixture.url("Library/Caches/broken"))
        try fixture.file("Library/Caches/broken", bytes: 1)  // a file where the directory was
        try fixture.file("Library/Caches/fine/old", modified: now - 5 * day)

        let report = try await purgeable.sweep()
        #expect(report.directories[0].error?.contains("not a directory") == true)
        #expect(report.directories[1].removedForAge == 1)
        #expect(!report.isComplete)
    }
}

@Suite("purgeable registry format")
struct PurgeableRegistryFormatTests {
    @Test("a registry of a newer version is refused with .unsupported and not overwritten by a registration")
    func newerVersion() throws {
        let fixture = try TestContainer()
        let purgeable = PurgeableDirectories(container: fixture.container)
        _ = try purgeable.register("Documents/a", policy: .oneWeek)
        let registry = fixture.container.url(for: .applicationSupport).appending(
            path: "Stowage/purgeable-directories.json"
        )
        let newer = Data(#"{"version": 2, "directories": [], "somethingNew": true}"#.utf8)
        try newer.write(to: registry)

        let error = #expect(throws: StowageError.self) { try purgeable.registrations() }
        #expect(error?.code == .unsupported)
        #expect(throws: StowageError.self) { try purgeable.register("Documents/b", policy: .manual) }
        #expect(try Data(contentsOf: registry) == newer)
    }
}
