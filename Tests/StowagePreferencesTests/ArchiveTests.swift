import Foundation
import StowageCore
import StowagePreferences
import Testing

private struct Settings: Codable, Sendable, Equatable {
    var theme: String
    var fontSizes: [Int]
}

/// Version 1 of `Settings`: one font size.
private struct SettingsV1: Codable, Sendable {
    var theme: String
    var fontSize: Int
}

@Suite("Archive")
struct ArchiveTests {
    @Test("JSON and binary property-list archives round-trip", arguments: [ArchiveFormat.json, .binaryPropertyList])
    func roundTrip(format: ArchiveFormat) async throws {
        let scratch = try PreferencesTestDirectory()
        let archive = Archive<Settings>(url: scratch.file("settings.archive"), format: format, version: 3)
        #expect(try await archive.read() == nil)
        let settings = Settings(theme: "dark", fontSizes: [12, 14])
        try await archive.write(settings)
        #expect(try await archive.read() == settings)
        let names = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path)
        #expect(names == ["settings.archive"])
    }

    @Test("an older version runs the migration and is written back in the current version")
    func migration() throws {
        let scratch = try PreferencesTestDirectory()
        let url = scratch.file("settings.json")
        try Archive<SettingsV1>(url: url, version: 1).write(SettingsV1(theme: "light", fontSize: 13))
        let archive = Archive<Settings>(url: url, version: 2) { stored in
            #expect(stored.version == 1)
            let old = try stored.decode(SettingsV1.self)
            return Settings(theme: old.theme, fontSizes: [old.fontSize])
        }
        #expect(try archive.read() == Settings(theme: "light", fontSizes: [13]))
        // Written back: version 2 now reads without the migration.
        #expect(try Archive<Settings>(url: url, version: 2).read() == Settings(theme: "light", fontSizes: [13]))
    }

    @Test("a newer version, or an older one without migration, is unsupported")
    func versionRefusals() throws {
        let scratch = try PreferencesTestDirectory()
        let url = scratch.file("settings.json")
        try Archive<Settings>(url: url, version: 5).write(Settings(theme: "x", fontSizes: []))
        #expect { try Archive<Settings>(url: url, version: 4).read() } throws: {
            ($0 as? StowageError)?.code == .unsupported
        }
        #expect { try Archive<Settings>(url: url, version: 6).read() } throws: {
            ($0 as? StowageError)?.code == .unsupported
        }
    }

    @Test("a damaged archive is a corrupt error naming the key at fault")
    func damaged() throws {
        let scratch = try PreferencesTestDirectory()
        let url = scratch.file("settings.json")
        try Data(#"{"version": 1, "value": {"theme": "dark", "fontSizes": [12, "big"]}}"#.utf8).write(to: url)
        do {
            _ = try Archive<Settings>(url: url).read()
            Issue.record("a damaged archive decoded")
        } catch let error as StowageError {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("value.fontSizes[1]"), "\(error.message)")
        }
    }
}
