import Foundation
import StowageCore
import StowagePreferences
import Testing

private struct Profile: Codable, Sendable, Equatable {
    var name: String
    var scores: [Int]
}

@Suite("Preferences")
struct PreferencesTests {
    @Test("every value type round-trips through a reopen")
    func everyTypeRoundTrips() async throws {
        let scratch = try PreferencesTestDirectory()
        let date = Date(timeIntervalSince1970: 1_700_000_000.123456)
        let profile = Profile(name: "Ada", scores: [3, 1, 4])
        let nested: [String: [Int]] = ["a": [1, 2], "b": []]
        do {
            let preferences = try await Preferences.open(suite: "main", in: scratch.container)
            try preferences.set(true, for: .init("bool", default: false))
            try preferences.set(-42, for: .init("int", default: 0))
            try preferences.set(Int.max, for: .init("max", default: 0))
            try preferences.set(2.5, for: .init("double", default: 0.0))
            try preferences.set("héllo ✓", for: .init("string", default: ""))
            try preferences.set(Data([0, 1, 255]), for: .init("data", default: Data()))
            try preferences.set(date, for: .init("date", default: Date.distantPast))
            try preferences.set(["x", "y"], for: .init("strings", default: [String]()))
            try preferences.set(nested, for: .init("nested", default: [:]))
            try preferences.set(profile, for: .init("profile", default: Profile(name: "", scores: [])))
            try preferences.set("here", for: Preferences.Key<String?>("optional"))
        }
        // The instance above is released: this open replays the file.
        let reopened = try await Preferences.open(suite: "main", in: scratch.container)
        #expect(reopened[.init("bool", default: false)] == true)
        #expect(reopened[.init("int", default: 0)] == -42)
        #expect(reopened[.init("max", default: 0)] == Int.max)
        #expect(reopened[.init("double", default: 0.0)] == 2.5)
        #expect(reopened[.init("string", default: "")] == "héllo ✓")
        #expect(reopened[.init("data", default: Data())] == Data([0, 1, 255]))
        #expect(reopened[.init("date", default: Date.distantPast)] == date)
        #expect(reopened[.init("strings", default: [String]())] == ["x", "y"])
        #expect(reopened[.init("nested", default: [String: [Int]]())] == nested)
        #expect(reopened[.init("profile", default: Profile(name: "", scores: []))] == profile)
        #expect(reopened[Preferences.Key<String?>("optional")] == "here")
        #expect(reopened.dictionaryRepresentation().count == 11)
    }

    @Test("a missing value, or one of another type, reads as the default; nil removes an optional")
    func defaultsAndRemoval() throws {
        let scratch = try PreferencesTestDirectory()
        let preferences = try Preferences.open(at: scratch.file())
        let count = Preferences.Key<Int>("count", default: 7)
        #expect(preferences[count] == 7)
        #expect(!preferences.contains(count))
        try preferences.set(.string("not a number"), forName: "count")
        #expect(preferences[count] == 7)
        try preferences.set(3, for: count)
        #expect(preferences[count] == 3)
        try preferences.remove(count)
        #expect(preferences[count] == 7)

        let token = Preferences.Key<String?>("token")
        try preferences.set("abc", for: token)
        #expect(preferences[token] == "abc")
        try preferences.set(nil, for: token)
        #expect(preferences[token] == nil)
        #expect(preferences.value(forName: "token") == nil)

        try preferences.set(1, for: count)
        try preferences.set(true, for: .init("flag", default: false))
        try preferences.removeAll()
        #expect(preferences.dictionaryRepresentation().isEmpty)
    }

    @Test("suite names that are not plain file names are refused", arguments: ["", "../escape", "a/b", ".hidden"])
    func badSuiteNames(suite: String) throws {
        let scratch = try PreferencesTestDirectory()
        #expect {
            try Preferences.open(suite: suite, in: scratch.container)
        } throws: { ($0 as? StowageError)?.code == .invalidArgument }
    }

    @Test("a file that is not a preferences log is a typed error and is left alone")
    func foreignFile() throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        let foreign = Data(repeating: 0x41, count: 5000)
        try foreign.write(to: file)
        #expect { try Preferences.open(at: file) } throws: { ($0 as? StowageError)?.code == .corrupt }
        #expect(try Data(contentsOf: file) == foreign)

        let short = scratch.file("short.stowprefs")
        try Data("STWPREF1".utf8).write(to: short)
        #expect { try Preferences.open(at: short) } throws: { ($0 as? StowageError)?.code == .corrupt }
    }

    @Test("a file from a newer format version is refused as unsupported")
    func newerFormat() throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        do {
            let preferences = try Preferences.open(at: file)
            try preferences.set(1, for: .init("a", default: 0))
        }
        var bytes = try [UInt8](Data(contentsOf: file))
        bytes[8] = 9  // format version
        try Data(bytes).write(to: file)
        #expect { try Preferences.open(at: file) } throws: { ($0 as? StowageError)?.code == .unsupported }
    }

    @Test("a torn or damaged tail is dropped on open; earlier values stay and nothing reads wrong")
    func tornTail() throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        do {
            let preferences = try Preferences.open(at: file)
            for index in 0..<100 { try preferences.set(.string("value \(index)"), forName: "key\(index)") }
        }
        let complete = try Data(contentsOf: file)

        // Cut the last record in half, as a power loss may (the header still claims all of it).
        try complete.prefix(complete.count - 5).write(to: file)
        do {
            let preferences = try Preferences.open(at: file)
            #expect(preferences.dictionaryRepresentation().count == 99)
            #expect(preferences.value(forName: "key98") == .string("value 98"))
            #expect(preferences.value(forName: "key99") == nil)
            // The store goes on from the repaired end.
            try preferences.set(.string("again"), forName: "key99")
        }
        let reopened = try Preferences.open(at: file)
        #expect(reopened.value(forName: "key99") == .string("again"))
        #expect(reopened.dictionaryRepresentation().count == 100)
    }

    @Test("a flipped byte in the last record fails its checksum: that record is dropped, not misread")
    func flippedByte() throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        do {
            let preferences = try Preferences.open(at: file)
            try preferences.set(.int(1), forName: "first")
            try preferences.set(.int(123_456), forName: "second")
        }
        var bytes = try [UInt8](Data(contentsOf: file))
        bytes[bytes.count - 2] ^= 0x01  // inside the second value's integer
        try Data(bytes).write(to: file)
        let preferences = try Preferences.open(at: file)
        #expect(preferences.value(forName: "first") == .int(1))
        #expect(preferences.value(forName: "second") == nil)
    }

    @Test("compaction keeps the latest values and bounds the file")
    func compaction() throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        var configuration = Preferences.Configuration()
        configuration.compactionThreshold = 16 * 1024
        do {
            let preferences = try Preferences.open(at: file, configuration: configuration)
            for index in 0..<20_000 { try preferences.set(.int(index), forName: "key\(index % 10)") }
            for key in 0..<10 { #expect(preferences.value(forName: "key\(key)") == .int(19_990 + key)) }
        }
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as! Int
        #expect(size < 4096 + 2 * 16 * 1024, "file is \(size) bytes after 20,000 writes to 10 keys")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter {
            $0.contains(".tmp-")
        }
        #expect(leftovers.isEmpty)
        let reopened = try Preferences.open(at: file, configuration: configuration)
        for key in 0..<10 { #expect(reopened.value(forName: "key\(key)") == .int(19_990 + key)) }
    }

    @Test("opening one file twice in a process gives the same store")
    func sameInstance() throws {
        let scratch = try PreferencesTestDirectory()
        let first = try Preferences.open(suite: "shared", in: scratch.container)
        let second = try Preferences.open(suite: "shared", in: scratch.container)
        #expect(first === second)
    }

    @Test("files are created owner-only")
    func permissions() throws {
        let scratch = try PreferencesTestDirectory()
        let preferences = try Preferences.open(suite: "main", in: scratch.container)
        let mode = try FileManager.default.attributesOfItem(atPath: preferences.url.path)[.posixPermissions] as! Int
        #expect(mode == 0o600)
    }
}
