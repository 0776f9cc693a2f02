import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Container")
struct ContainerTests {
    @Test("XDG variables decide the platform locations")
    func xdgVariables() throws {
        let container = try Container(
            identifier: "com.example.reader",
            environment: [
                "HOME": "/home/ada", "XDG_DATA_HOME": "/data", "XDG_CACHE_HOME": "/cache",
                "XDG_CONFIG_HOME": "/config", "TMPDIR": "/scratch",
            ]
        )
        #expect(container.url(for: .documents).path == "/data/com.example.reader/documents")
        #expect(container.url(for: .applicationSupport).path == "/data/com.example.reader/application-support")
        #expect(container.url(for: .caches).path == "/cache/com.example.reader")
        #expect(container.url(for: .preferences).path == "/config/com.example.reader")
        #expect(container.url(for: .temporary).path == "/scratch/com.example.reader-\(getuid())")
        #expect(container.root == nil)
    }

    @Test("unset, empty and relative XDG variables fall back to the spec's defaults under HOME")
    func xdgDefaults() throws {
        let container = try Container(
            identifier: "reader",
            environment: ["HOME": "/home/ada", "XDG_DATA_HOME": "", "XDG_CACHE_HOME": "relative/cache"]
        )
        #expect(container.url(for: .documents).path == "/home/ada/.local/share/reader/documents")
        #expect(container.url(for: .caches).path == "/home/ada/.cache/reader")
        #expect(container.url(for: .preferences).path == "/home/ada/.config/reader")
        #expect(container.url(for: .temporary).path == "/tmp/reader-\(getuid())")
    }

    @Test(
        "bad identifiers are rejected with invalidArgument",
        arguments: ["", ".", "..", "a/b", "../escape", "sp ace", "ünïcode", String(repeating: "a", count: 256)]
    )
    func badIdentifiers(identifier: String) {
        #expect(throws: StowageError.self) {
            _ = try Container(identifier: identifier, environment: ["HOME": "/home/ada"])
        }
        do {
            _ = try Container(identifier: identifier, environment: ["HOME": "/home/ada"])
        } catch let error as StowageError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("com.example.reader"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test("a rooted container lays locations out like an iOS sandbox")
    func rootedLayout() throws {
        let container = Container(root: URL(filePath: "/srv/reader/"))
        #expect(container.identifier == "reader")
        #expect(container.url(for: .documents).path == "/srv/reader/Documents")
        #expect(container.url(for: .applicationSupport).path == "/srv/reader/Library/Application Support")
        #expect(container.url(for: .caches).path == "/srv/reader/Library/Caches")
        #expect(container.url(for: .preferences).path == "/srv/reader/Library/Preferences")
        #expect(container.url(for: .temporary).path == "/srv/reader/tmp")
    }

    @Test("first use creates each location with the marks its meaning calls for")
    func firstUseMarks() async throws {
        let scratch = try TemporaryDirectory()
        let container = Container(root: scratch.url)
        for location in Location.allCases {
            let url = try await container.directory(for: location)
            let path = url.path(percentEncoded: false)
            var status = stat()
            #expect(lstat(path, &status) == 0)
            #expect(status.st_mode & S_IFMT == S_IFDIR)
            let backup = try pythonGetXattr(path, Marks.backupAttribute)
            let purgeable = try pythonGetXattr(path, Marks.purgeableAttribute)
            let tagged = FileManager.default.fileExists(atPath: path + "/CACHEDIR.TAG")
            switch location {
            case .caches:
                #expect(backup == "false" && purgeable == "true" && tagged)
            case .temporary:
                #expect(backup == "false" && purgeable == "true" && !tagged)
            case .documents, .applicationSupport, .preferences:
                #expect(backup == nil && purgeable == nil && !tagged, "\(location) must be backed up")
            }
        }
        // A second use changes nothing and does not fail.
        _ = try await container.directory(for: .caches)
    }

    @Test("a file where a location should be is a notADirectory error")
    func fileInTheWay() throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("Documents")
        let container = Container(root: scratch.url)
        #expect {
            try container.directory(for: .documents)
        } throws: { error in
            (error as? StowageError)?.code == .notADirectory
        }
    }

    @Test("the report measures every location and reads the marks back")
    func report() async throws {
        let scratch = try TemporaryDirectory()
        let container = Container(root: scratch.url, identifier: "com.example.test")
        let caches = try await container.directory(for: .caches)
        try Data(repeating: 1, count: 10_000).write(to: caches.appending(path: "blob"))
        let report = try await container.report()
        #expect(report.identifier == "com.example.test")
        #expect(report.locations.map(\.location) == Location.allCases)
        let cachesReport = try #require(report.locations.first { $0.location == .caches })
        #expect(cachesReport.usage.logicalBytes.rawValue == 10_000 + Int64(CacheDirectoryTag.contents.utf8.count))
        #expect(
            cachesReport.usage.allocatedBytes.rawValue == (try duAllocatedBytes(caches.path(percentEncoded: false)))
        )
        #expect(cachesReport.excludedFromBackup == .set && cachesReport.purgeable == .set)
        #expect(cachesReport.hasCacheDirectoryTag)
        #expect(!cachesReport.isBackedUp)
        let documents = try #require(report.locations.first { $0.location == .documents })
        #expect(documents.excludedFromBackup == .unset && documents.isBackedUp)
        #expect(documents.capacity.total > .zero)
    }

    @Test("clearing a location keeps the directory and its CACHEDIR.TAG")
    func clearLocation() async throws {
        let scratch = try TemporaryDirectory()
        let container = Container(root: scratch.url)
        let caches = try await container.directory(for: .caches)
        try Data(count: 5_000).write(to: caches.appending(path: "a"))
        try FileManager.default.createDirectory(at: caches.appending(path: "sub"), withIntermediateDirectories: true)
        try Data(count: 5_000).write(to: caches.appending(path: "sub/b"))
        let report = try await container.clear(.caches)
        #expect(report.removedCount == 3)
        #expect(report.isComplete)
        #expect(CacheDirectoryTag.isPresent(in: caches))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: caches.path(percentEncoded: false)) == ["CACHEDIR.TAG"]
        )
    }
}
