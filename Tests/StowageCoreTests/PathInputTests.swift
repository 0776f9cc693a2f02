import Foundation
import StowageTestSupport
import Testing

@testable import StowageCore

@Suite("PathInput")
struct PathInputTests {
    @Test(
        "NUL, control characters and DEL are refused, naming the byte and its position",
        arguments: [
            ("Documents/..\u{0}/..", "a NUL byte at byte 12"),
            ("a\nb", #"the control character \n at byte 1"#),
            ("\u{1B}[2J", #"the control character \x1b at byte 0"#),
            ("x\u{7F}", #"the control character \x7f at byte 1"#),
            ("tab\there", #"the control character \t at byte 3"#),
        ]
    )
    func refusesControlBytes(path: String, what: String) {
        #expect {
            try PathInput.check(path, subject: "task 1")
        } throws: { error in
            guard let error = error as? StowageError else { return false }
            return error.code == .invalidArgument && error.message.hasPrefix("task 1: ")
                && error.message.contains(what) && !error.message.unicodeScalars.contains { $0.value < 0x20 }
        }
    }

    @Test("an empty path is refused: it would mean the working directory")
    func refusesEmpty() {
        #expect(throws: StowageError.self) { try PathInput.check("", subject: "--manifest") }
    }

    @Test("a path over PATH_MAX is refused with a message that does not echo it whole")
    func refusesHugePaths() throws {
        let huge = String(repeating: "a/", count: 5_000_000)
        let error = try #require(throws: StowageError.self) { try PathInput.check(huge, subject: "usage") }
        #expect(error.message.count < 400, "\(error.message.count) characters")
        #expect(error.message.contains("10000000 bytes"))
    }

    @Test("ordinary paths pass, including spaces and non-ASCII names")
    func acceptsOrdinaryPaths() throws {
        for path in ["/tmp/x", "Library/Caches/images", "Documents/café photos/été.jpg", "./a", "/"] {
            try PathInput.check(path, subject: "test")
        }
    }

    @Test("quoted escapes control characters and cuts long text")
    func quoting() {
        #expect(PathInput.quoted("a\u{0}b\nc") == #"'a\0b\nc'"#)
        #expect(PathInput.quoted(String(repeating: "x", count: 500), limit: 10) == "'xxxxxxxxxx…' (500 bytes)")
    }

    @Test("APIs that take a URL refuse a NUL in it before any system call")
    func urlArguments() async throws {
        let scratch = try TemporaryDirectory()
        let nul = URL(filePath: scratch.path + "/x\u{0}/..")
        await #expect(throws: StowageError.self) { _ = try await DiskUsage.measure(nul) }
        #expect(throws: StowageError.self) { _ = try DirectoryClearing.clearContents(of: nul) }
        #expect(throws: StowageError.self) { _ = try Marks.isPurgeable(nul) }
        #expect(throws: StowageError.self) { _ = try VolumeCapacity.forVolume(containing: nul) }
    }
}
