import Foundation
import StowageCore
import StowageHousekeeping
import StowageTestSupport
import Testing

@testable import StowageCache

/// Paths that arrive with NUL or control bytes: a system call stops at the
/// first NUL, so `..\0` would act as `..` after every check on the Swift string had passed.
@Suite("paths from manifests and registries")
struct PathInputTests {
    /// A container at `outer/app`, with a precious file in `outer` that nothing may touch.
    struct Fixture {
        let outer: TemporaryDirectory
        let container: Container
        var root: URL { outer.url.appending(path: "app") }

        init(_ name: String = #function) throws {
            outer = try TemporaryDirectory(name)
            try Data("precious".utf8).write(to: outer.url.appending(path: "precious"))
            container = Container(root: outer.url.appending(path: "app", directoryHint: .isDirectory))
            for directory in ["Documents", "Library/Caches/junk"] {
                try FileManager.default.createDirectory(
                    at: root.appending(path: directory),
                    withIntermediateDirectories: true
                )
            }
            try Data("document".utf8).write(to: root.appending(path: "Documents/keep"))
            try Data("junk".utf8).write(to: root.appending(path: "Library/Caches/junk/entry"))
        }

        func untouched() -> Bool {
            FileManager.default.fileExists(atPath: outer.url.appending(path: "precious").path)
                && FileManager.default.fileExists(atPath: root.appending(path: "Documents/keep").path)
                && FileManager.default.fileExists(atPath: root.appending(path: "Library/Caches/junk/entry").path)
        }
    }

    static let escapingPath = "Documents/..\u{0}/..\u{0}"

    /// The three manifest encodings that can carry a NUL: JSON `\u0000`, XML `&#0;`, binary.
    static func manifests(path: String) throws -> [(String, Data)] {
        let json = Data(#"[{"Path":"\#(path.replacingOccurrences(of: "\u{0}", with: "\\u0000"))"}]"#.utf8)
        let xml = Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><array><dict><key>Path</key>\
            <string>\(path.replacingOccurrences(of: "\u{0}", with: "&#0;"))</string></dict></array></plist>
            """.utf8
        )
        let binary = try PropertyListSerialization.data(
            fromPropertyList: [["Path": path]],
            format: .binary,
            options: 0
        )
        return [("json", json), ("xml", xml), ("binary", binary)]
    }

    @Test("a NUL in a manifest's Path (JSON, XML and binary plist) is refused; nothing outside is touched")
    func nulInManifestPath() async throws {
        for (format, data) in try Self.manifests(path: Self.escapingPath) {
            let fixture = try Fixture()
            let manifest = try CleanManifest(data: data, source: "m.\(format)")
            guard case .path(let parsed, _) = manifest.tasks.first else { throw TestFailure("no task") }
            #expect(parsed.utf8.contains(0), "\(format): the parser keeps the NUL, so the check must catch it")
            let report = try await CacheCleaner(container: fixture.container).clean(manifest)
            let error = try #require(report.tasks.first?.error, "\(format): the task must fail")
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("NUL"), "\(error.message)")
            #expect(error.message.contains(#"Documents/..\0/..\0"#), "the path shown escaped: \(error.message)")
            #expect(fixture.untouched(), "\(format): the container's parent must be untouched")
        }
    }

    @Test("'Library/Caches/junk\\0ignored' does not clean 'junk'; control characters are refused too")
    func nulAndControlCharacters() async throws {
        let fixture = try Fixture()
        let report = try await CacheCleaner(container: fixture.container).clean(
            CleanManifest(tasks: [
                .path("Library/Caches/junk\u{0}ignored", entries: []),
                .path("Library/Caches/junk\nx", entries: []),
                .path("Library/Caches/junk", entries: ["*\u{0}"]),
                .path("Library/Caches/junk\u{1B}[2J", entries: []),
            ])
        )
        #expect(report.tasks.map { $0.error?.code } == Array(repeating: .invalidArgument, count: 4))
        #expect(report.tasks[1].error?.message.contains(#"\n"#) == true, "\(report.tasks[1].error!.message)")
        #expect(report.tasks[3].error?.message.contains(#"\x1b"#) == true, "\(report.tasks[3].error!.message)")
        #expect(fixture.untouched())
    }

    @Test("a hand-edited purgeable registry with a NUL path: sweep and reset-all touch nothing outside")
    func nulInRegistry() async throws {
        let fixture = try Fixture()
        let directories = PurgeableDirectories(container: fixture.container)
        _ = try await directories.register("Library/Caches/junk", policy: .manual)
        let registry = fixture.container.url(for: .applicationSupport)
            .appending(path: "Stowage/purgeable-directories.json")
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: registry)) as? [String: Any])
        var entries = try #require(object["directories"] as? [[String: Any]])
        entries[0]["path"] = Self.escapingPath
        object["directories"] = entries
        try JSONSerialization.data(withJSONObject: object).write(to: registry)

        let reset = try await directories.resetAll()
        #expect(reset.directories.first?.error?.contains("NUL") == true, "\(reset)")
        let sweep = try await directories.sweep()
        #expect(sweep.directories.first?.error?.contains("NUL") == true)
        #expect(fixture.untouched())
    }

    @Test("registering, clearing or unregistering a path with a NUL through the API is refused")
    func nulThroughTheAPI() async throws {
        let fixture = try Fixture()
        let directories = PurgeableDirectories(container: fixture.container)
        await #expect {
            _ = try await directories.register("Library/Caches/a\u{0}/../../..", policy: .olderThan(days: 3))
        } throws: { ($0 as? StowageError)?.code == .invalidArgument }
        await #expect {
            _ = try await directories.clear(Self.escapingPath)
        } throws: { ($0 as? StowageError)?.code == .invalidArgument }
        #expect(fixture.untouched())
    }
}

/// Inputs the manifest fuzzer (Fuzz/run.sh manifest) found.
@Suite("manifest fuzzer findings")
struct ManifestFuzzFindingsTests {
    @Test("a binary property list with a set inside an array is a typed error, not a crash")
    func setInBinaryPlist() throws {
        // Found by libFuzzer: PropertyListSerialization's CoreFoundation bridge dereferenced null.
        let crash = try #require(
            Data(
                base64Encoded:
                    "YnBsaXN0MDChAcICAwQHV0VudHJpZXNUUGF0aKIFBmJwbAB/Z1goL3RodW1kAF8QFf///zlhcnvRxJ+8l5JzL2ltYWdlcwgKDxccHx8uAAF3gGwAAQEAAAAAAAAACAAAAAAAAAAAAAAAAAAAAEY="
            )
        )
        let error = try #require(throws: StowageError.self) { try CleanManifest(data: crash, source: "m.plist") }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("binary property list"), "\(error.message)")
    }

    @Test("a parser's message quoting NUL bytes from the input is escaped")
    func nulInParserDetail() throws {
        let text = "<?xml version=\"1.0\" encoding=\"UT\u{0}\u{0}F-8\"?>\n<plist version=\"1.0\"><array/></plist>\n"
        let error = try #require(throws: StowageError.self) { try CleanManifest(data: Data(text.utf8), source: "m") }
        #expect(!error.message.unicodeScalars.contains { $0.value < 0x20 }, "\(error.message.debugDescription)")
    }

    @Test("a binary property list manifest still parses (paths, entries, handlers)")
    func binaryStillParses() throws {
        let data = try PropertyListSerialization.data(
            fromPropertyList: [
                ["Path": "Library/Caches/images", "Entries": ["*.jpg"]], ["Class": "C", "Selectors": ["s:"]],
            ],
            format: .binary,
            options: 0
        )
        let manifest = try CleanManifest(data: data)
        #expect(
            manifest.tasks == [
                .path("Library/Caches/images", entries: ["*.jpg"]), .handler(className: "C", selectors: ["s:"]),
            ]
        )
    }
}

extension ManifestFuzzFindingsTests {
    @Test("a binary property list that holds itself is refused promptly, not decoded forever")
    func cycleInBinaryPlist() throws {
        // Found by libFuzzer: the decoder followed the reference cycle until the fuzzer's timeout.
        let cycle = try #require(
            Data(
                base64Encoded:
                    "YnBsaXN0MDCiAQfSAgMEBldFbnRyaWVzVFBhdGihAGIQBVNhX1ERWKGhDFJzfwgLEC4ALy4uANIICQoLVUNsYXNzWVNlbGVjdG9yc1FYoQxSc38ICxAYHSkjNjxCTE5QAAAAAAAAAQEAAAAAAAAADQAAAAAAAAAAAAAAAAAAAFM="
            )
        )
        let error = try #require(throws: StowageError.self) { try CleanManifest(data: cycle, source: "m.plist") }
        #expect(error.message.contains("nests deeper") || error.message.contains("binary property list"))
    }
}

extension PathInputTests {
    @Test("a NUL in a store's directory URL is refused before anything is created")
    func nulInStoreDirectories() throws {
        let scratch = try TemporaryDirectory()
        let bad = URL(filePath: scratch.path + "/x\u{0}/../escaped")
        #expect {
            _ = try DiskCache(directory: bad)
        } throws: { ($0 as? StowageError)?.code == .invalidArgument }
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/x"))
    }
}
