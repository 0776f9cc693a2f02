import Foundation
import StowageCore
import StowagePreferences
import StowageTestSupport
import Testing

@Suite("Preferences property lists")
struct PreferencesPropertyListTests {
    /// What UserDefaults writes for a suite (XML, as on Linux).
    private static let defaultsFile = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
            <key>launchCount</key><integer>12</integer>
            <key>onboarded</key><true/>
            <key>ratio</key><real>0.75</real>
            <key>username</key><string>ada</string>
            <key>lastOpen</key><date>2024-03-01T12:00:00Z</date>
            <key>avatar</key><data>AAEC</data>
            <key>recent</key><array><string>a</string><string>b</string></array>
            <key>window</key><dict><key>width</key><integer>800</integer><key>zoom</key><real>1.5</real></dict>
        </dict>
        </plist>
        """

    @Test("imports a UserDefaults property list with each type mapped")
    func importDefaults() async throws {
        let scratch = try PreferencesTestDirectory()
        let source = scratch.file("defaults.plist")
        try Data(Self.defaultsFile.utf8).write(to: source)
        let preferences = try await Preferences.open(at: scratch.file())
        let imported = try await preferences.importPropertyList(from: source)
        #expect(imported == 8)
        #expect(preferences[.init("launchCount", default: 0)] == 12)
        #expect(preferences[.init("onboarded", default: false)] == true)
        #expect(preferences[.init("ratio", default: 0.0)] == 0.75)
        #expect(preferences[.init("username", default: "")] == "ada")
        #expect(preferences[.init("lastOpen", default: Date.distantPast)] == Date(timeIntervalSince1970: 1_709_294_400))
        #expect(preferences[.init("avatar", default: Data())] == Data([0, 1, 2]))
        #expect(preferences[.init("recent", default: [String]())] == ["a", "b"])
        #expect(
            preferences.value(forName: "window") == .dictionary(["width": .int(800), "zoom": .double(1.5)])
        )
    }

    @Test("exports XML and binary that read back equal, and that Python's plistlib reads")
    func exportRoundTrip() async throws {
        let scratch = try PreferencesTestDirectory()
        let source = scratch.file("defaults.plist")
        try Data(Self.defaultsFile.utf8).write(to: source)
        let preferences = try await Preferences.open(at: scratch.file())
        try await preferences.importPropertyList(from: source)
        for format in [Preferences.PropertyListFormat.xml, .binary] {
            let exported = scratch.file("exported-\(format).plist")
            try await preferences.exportPropertyList(to: exported, format: format)
            let other = try await Preferences.open(at: scratch.file("other-\(format).stowprefs"))
            try await other.importPropertyList(from: exported)
            #expect(other.dictionaryRepresentation() == preferences.dictionaryRepresentation())
        }
        let python = ChildProcess()
        python.executableURL = URL(filePath: "/usr/bin/env")
        python.arguments = [
            "python3", "-c",
            "import plistlib,sys; d=plistlib.load(open(sys.argv[1],'rb')); print(d['launchCount'], d['window']['zoom'], d['onboarded'])",
            scratch.file("exported-binary.plist").path,
        ]
        let output = childPipe()
        python.standardOutput = output
        try python.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        #expect(text == "12 1.5 True\n")
    }

    @Test("a file that is not a property list is a typed error and imports nothing")
    func badImport() throws {
        let scratch = try PreferencesTestDirectory()
        let source = scratch.file("broken.plist")
        try Data("<plist><dict><key>a</key><integer>1</integer>".utf8).write(to: source)
        let preferences = try Preferences.open(at: scratch.file())
        #expect { try preferences.importPropertyList(from: source) } throws: {
            ($0 as? StowageError)?.code == .corrupt
        }
        #expect(preferences.dictionaryRepresentation().isEmpty)
    }

    // MARK: - Numbers JSON and property lists cannot carry

    @Test(
        "importing NaN or an infinity is a typed error naming the key, and imports nothing from the file",
        arguments: ["<real>nan</real>", "<real>inf</real>", "<real>-inf</real>", "<array><real>nan</real></array>"]
    )
    func nonFiniteImportRefused(value: String) throws {
        let scratch = try PreferencesTestDirectory()
        let source = scratch.file("nan.plist")
        try Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
                <key>aFirst</key><string>applied before the bad one, were it applied in order</string>
                <key>ratio</key>\(value)
            </dict></plist>
            """.utf8
        ).write(to: source)
        let preferences = try Preferences.open(at: scratch.file())
        let error = #expect(throws: StowageError.self) { try preferences.importPropertyList(from: source) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("\"ratio") == true, "\(String(describing: error))")
        #expect(error?.message.contains("must be finite") == true, "\(String(describing: error))")
        #expect(preferences.dictionaryRepresentation().isEmpty, "all or nothing")
    }

    @Test("a binary property list holding NaN is refused too")
    func nonFiniteBinaryImportRefused() throws {
        let scratch = try PreferencesTestDirectory()
        let source = scratch.file("nan.bplist")
        try PropertyListSerialization.data(
            fromPropertyList: ["a": 1, "ratio": Double.nan],
            format: .binary,
            options: 0
        )
        .write(to: source)
        let preferences = try Preferences.open(at: scratch.file())
        let error = #expect(throws: StowageError.self) { try preferences.importPropertyList(from: source) }
        #expect(error?.message.contains("\"ratio\" is nan") == true, "\(String(describing: error))")
        #expect(preferences.dictionaryRepresentation().isEmpty)
    }

    @Test(
        "the setters refuse NaN and infinities with a typed error, so every stored value exports",
        arguments: [
            PreferenceValue.double(.nan), .double(.infinity), .double(-.infinity),
            .date(Date(timeIntervalSince1970: .nan)), .array([.int(1), .double(.nan)]),
            .dictionary(["zoom": .double(.infinity)]),
        ]
    )
    func nonFiniteSetRefused(value: PreferenceValue) throws {
        let scratch = try PreferencesTestDirectory()
        let preferences = try Preferences.open(at: scratch.file())
        let error = #expect(throws: StowageError.self) { try preferences.set(value, forName: "ratio") }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("\"ratio") == true, "\(String(describing: error))")
        let typed = #expect(throws: StowageError.self) {
            try preferences.set(Double.nan, for: PreferenceKey("zoom", default: 1.0))
        }
        #expect(typed?.code == .invalidArgument)
        #expect(preferences.dictionaryRepresentation().isEmpty)
        try preferences.set(.double(1.5), forName: "ratio")
        #expect(preferences.value(forName: "ratio") == .double(1.5))
    }
}
