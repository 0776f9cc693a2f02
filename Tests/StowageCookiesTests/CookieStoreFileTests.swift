import Foundation
import StowageCookies
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The cookie file: what survives a new store, damage, and a writer killed mid-write.
@Suite struct CookieStoreFileTests {
    let clock = ManualClock()

    func open(_ file: URL, _ configuration: CookieStore.Configuration = builtInOnly()) throws -> CookieStore {
        try CookieStore.open(at: file, configuration: configuration, clock: clock.cacheClock)
    }

    @Test("persistent cookies survive a new store; session cookies do not, unless configured")
    func sessionCookiesNotPersisted() async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "Cookies/cookies.stowcookies")
        let first = try await CookieStore.open(at: file, configuration: builtInOnly(), clock: clock.cacheClock)
        try await first.setCookie(
            "kept=1; Max-Age=3600; Secure; HttpOnly; SameSite=Lax",
            from: url("https://example.com/a/b")
        )
        try await first.setCookie("session=1", from: url("https://example.com/"))
        let second = try open(file)
        #expect(second.damagedRecordCount == 0)
        let restored = try #require(second.allCookies.first)
        #expect(second.allCookies.count == 1)
        #expect(restored == first.allCookies.first { $0.name == "kept" })
        #expect(restored.sameSite == .lax && restored.isSecure && restored.isHTTPOnly && restored.path == "/a")

        var keepsSessions = builtInOnly()
        keepsSessions.persistsSessionCookies = true
        let third = try open(file, keepsSessions)
        try await third.setCookie("session=2", from: url("https://example.com/"))
        #expect(try open(file, keepsSessions).allCookies.map(\.name).sorted() == ["kept", "session"])
    }

    @Test("a deletion and an expiry reach the file; expired cookies are not loaded")
    func deletionsPersisted() throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "cookies.stowcookies")
        let store = try open(file)
        try store.setCookies(
            ["a=1; Max-Age=60", "b=1; Max-Age=3600", "c=1; Max-Age=3600"],
            from: url("http://example.com/")
        )
        try store.setCookie("b=; Max-Age=0", from: url("http://example.com/"))
        clock.advance(by: .seconds(120))
        #expect(try open(file).allCookies.map(\.name) == ["c"])
        try store.removeAll()
        #expect(try open(file).allCookies.isEmpty)
    }

    @Test("a damaged record costs that record only; the others load")
    func damagedRecordRecovery() throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "cookies.stowcookies")
        let store = try open(file)
        for name in ["a", "b", "c", "d"] {
            try store.setCookie("\(name)=value-\(name); Max-Age=3600", from: url("http://example.com/"))
        }
        var bytes = try Array(Data(contentsOf: file))
        // Flip one byte inside b's record and cut d's record in half (a torn tail).
        let text = String(decoding: bytes, as: UTF8.self)
        let bOffset = try #require(text.utf8.firstRange(of: Array("value-b".utf8))).lowerBound
        bytes[text.utf8.distance(from: text.utf8.startIndex, to: bOffset)] ^= 0x20
        let dLine = try #require(text.utf8.firstRange(of: Array("value-d".utf8))).lowerBound
        bytes.removeLast(bytes.count - text.utf8.distance(from: text.utf8.startIndex, to: dLine))
        try Data(bytes).write(to: file)

        let reopened = try open(file)
        #expect(reopened.damagedRecordCount == 2)
        #expect(reopened.allCookies.map(\.name) == ["a", "c"])
        // The next write leaves a sound file.
        try reopened.setCookie("e=1; Max-Age=3600", from: url("http://example.com/"))
        let again = try open(file)
        #expect(again.damagedRecordCount == 0)
        #expect(again.allCookies.map(\.name) == ["a", "c", "e"])
    }

    @Test("a file of a newer format is refused rather than overwritten")
    func newerFormatRefused() throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "cookies.stowcookies")
        try Data("stowage-cookies 9\n".utf8).write(to: file)
        #expect {
            try open(file)
        } throws: { ($0 as? StowageError)?.code == .unsupported && "\($0)".contains(file.path) }
    }

    @Test("kill -9 during writes: every cookie whose set returned is there, no record is torn")
    func killSafeWrite() async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "Cookies/cookies.stowcookies")
        let process = TestWorker.process("cookies", ["write", file.path, "2000"])
        let pipe = childPipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading
        var seen = try await kill(process, once: output, contains: "set 300\n")
        #expect(process.terminationReason == .uncaughtSignal)
        seen += String(decoding: try await waitForExit(process, readingToEnd: output), as: UTF8.self)
        let returned = seen.split(separator: "\n").compactMap { $0.hasPrefix("set ") ? Int($0.dropFirst(4)) : nil }
        let lastReturned = try #require(returned.max())

        let store = try await CookieStore.open(at: file)
        #expect(store.damagedRecordCount == 0)
        let values = Dictionary(uniqueKeysWithValues: store.allCookies.map { ($0.domain, "\($0.name)=\($0.value)") })
        for index in 0...lastReturned {
            #expect(values["site\(index).example"] == workerCookie(index), "set \(index) returned")
        }
        // At most the one set in flight when the signal came may have landed as well.
        #expect(values.count <= lastReturned + 2)
        // The killed writer's temporary file is gone once the store is opened again.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
        // Beside the file: its directory's generation (retired when a wipe removes the
        // directory) and the lock it is installed under.
        #expect(leftovers.sorted() == [".stowage-generation", "cookies.stowcookies", "open.lock"])
    }

    @Test("opening removes the cookie file's temporaries a dead process left; a running one's and other files' stay")
    func leftoverTemporaries() throws {
        let scratch = try TemporaryDirectory()
        try scratch.makeDirectory("Cookies")
        let file = scratch.url.appending(path: "Cookies/cookies.stowcookies")
        let dead = try deadProcessID()
        let gone = "cookies.stowcookies.tmp-\(dead)-1"
        let kept = ["cookies.stowcookies.tmp-\(getpid())-2", "notes.txt.tmp-\(dead)-3"]
        for name in [gone] + kept { try Data().write(to: scratch.url.appending(path: "Cookies/" + name)) }
        _ = try open(file)
        let names = try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/Cookies")
        #expect(names.sorted() == (kept + [".stowage-generation", "open.lock"]).sorted())
    }

    /// The worker's cookie number `index` (`CookiesWorkerCommand.value`).
    func workerCookie(_ index: Int) -> String { "c\(index)=v\(index)-" + String(repeating: "x", count: index % 200) }
}
