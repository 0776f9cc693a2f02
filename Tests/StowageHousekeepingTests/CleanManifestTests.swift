import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHousekeeping

@Suite("clean manifest")
struct CleanManifestTests {
    @Test("an Xcode-written PurgeableCache.plist is parsed as is")
    func xcodeWrittenPlist() throws {
        let manifest = try CleanManifest(data: Data(purgeableCachePlist.utf8), source: "PurgeableCache.plist")
        #expect(
            manifest.tasks == [
                .path("Documents/Caches", entries: ["*.tmp", "image_*"]),
                .path("Library/Caches/WebCache", entries: []),
                .handler(className: "APCacheCleanHandler", selectors: ["cleanMemoryCache", "cleanDiskCache"]),
            ]
        )
    }

    @Test("the binary form of the same plist and the JSON form give the same tasks")
    func binaryAndJSON() throws {
        let xcodeWritten = try CleanManifest(data: Data(purgeableCachePlist.utf8))
        let object = try PropertyListSerialization.propertyList(from: Data(purgeableCachePlist.utf8), format: nil)
        let binary = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        #expect(try CleanManifest(data: binary).tasks == xcodeWritten.tasks)
        let json = """
            [{"Path": "Documents/Caches", "Entries": ["*.tmp", "image_*"]},
             {"Path": "Library/Caches/WebCache"},
             {"Class": "APCacheCleanHandler", "Selectors": ["cleanMemoryCache", "cleanDiskCache"]}]
            """
        #expect(try CleanManifest(data: Data(json.utf8)).tasks == xcodeWritten.tasks)
    }

    @Test(
        "a malformed manifest is a typed error naming the line or the key",
        arguments: [
            ("[{\"Path\": \"Library/Caches/x\",\n \"Entries\": [1 2]}]", "line 2"),
            ("[{\"Path\": 5}]", "'Path'"),
            ("[{\"Path\": \"Library/Caches\", \"Entries\": \"*.tmp\"}]", "'Entries' must be an array"),
            ("[{\"Path\": \"Library/Caches\", \"Entries\": [\"a\", 3]}]", "'Entries' element 2"),
            ("[{\"Class\": \"Foo\"}]", "missing the key 'Selectors'"),
            ("[{\"Class\": \"Foo\", \"Path\": \"Documents\"}]", "both 'Path' and 'Class'"),
            ("[{\"Entry\": [\"*\"]}]", "unknown key 'Entry'"),
            ("[{}]", "neither 'Path' nor 'Class'"),
            ("{\"Path\": \"Documents\"}", "array of tasks"),
            ("[\"Documents\"]", "item 1 must be a dictionary"),
            (
                "<?xml version=\"1.0\"?>\n<plist version=\"1.0\">\n<array>\n<dict>\n<key>Path</key>\n<string>x</strin>\n</dict>\n</array>\n</plist>",
                "line 6"
            ),
        ]
    )
    func malformed(text: String, fault: String) {
        let error = #expect(throws: StowageError.self) { try CleanManifest(data: Data(text.utf8), source: "m") }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(fault) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("nothing was deleted") == true)
    }

    // MARK: - Wildcards

    @Test(
        arguments: [
            ("*", "anything.at.all", true), ("*", ".hidden", true), ("*.tmp", "a.tmp", true),
            ("*.tmp", "a.tmpx", false),
            ("image_*", "image_1.png", true), ("image_*", "img_1.png", false), ("?.log", "a.log", true),
            ("?.log", "ab.log", false), ("a*b*c", "aXXbYYc", true), ("a*b*c", "aXXbYY", false), ("*?", "", false),
            ("日?", "日本", true), ("**", "x", true), ("exact", "exact", true), ("exact", "exactly", false),
        ]
    )
    func wildcards(pattern: String, name: String, matches: Bool) throws {
        #expect(try EntryPattern(parsing: pattern, subject: "t").matches(name, level: 0) == matches)
    }

    @Test(arguments: ["/etc/*", "../*", "a/../../b", "~/x"])
    func escapingEntriesAreRefused(pattern: String) {
        let error = #expect(throws: StowageError.self) { try EntryPattern(parsing: pattern, subject: "task 1") }
        #expect(error?.code == .pathEscapesRoot)
    }
}
