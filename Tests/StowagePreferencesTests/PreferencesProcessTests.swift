import Foundation
import StowagePreferences
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Real processes: a writer killed with SIGKILL, two writers sharing one suite.
@Suite("Preferences across processes", .serialized)
struct PreferencesProcessTests {
    @Test("kill -9 during 20,000 sets: every set that returned is there, nothing reads back torn")
    func killDuringWrites() async throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        let count = 20_000
        let (process, output) = try PreferencesWorker.startWriting(file: file, prefix: "k", count: count, keys: count)
        var seen = try await kill(process, once: output, contains: "set 3000\n")
        #expect(process.terminationReason == .uncaughtSignal)
        seen += String(decoding: try await waitForExit(process, readingToEnd: output), as: UTF8.self)
        let returned = seen.split(separator: "\n").compactMap { $0.hasPrefix("set ") ? Int($0.dropFirst(4)) : nil }
        let lastReturned = try #require(returned.max())

        let preferences = try await Preferences.open(at: file)
        let stored = preferences.dictionaryRepresentation()
        for index in 0...lastReturned {
            #expect(stored["k\(index)"] == .string(PreferencesWorker.value(index)), "set \(index) returned")
        }
        // At most the one set in flight when the signal came may have landed as well, whole.
        #expect(stored.count <= lastReturned + 2)
        if stored.count == lastReturned + 2 {
            #expect(stored["k\(lastReturned + 1)"] == .string(PreferencesWorker.value(lastReturned + 1)))
        }
    }

    @Test("two processes writing one suite at once, with compactions: every last value is there")
    func twoWriters() async throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        let count = 5_000
        let keys = 250
        // A small threshold makes both processes compact (rename the file) many times meanwhile.
        let writers = try ["a", "b"].map {
            try PreferencesWorker.startWriting(
                file: file,
                prefix: $0,
                count: count,
                keys: keys,
                compactionThreshold: 8192
            )
        }
        for (process, output) in writers {
            let text = String(decoding: try await waitForExit(process, readingToEnd: output), as: UTF8.self)
            #expect(process.terminationStatus == 0)
            #expect(text.hasSuffix("done \(count)\n"))
        }
        let preferences = try await Preferences.open(at: file)
        let stored = preferences.dictionaryRepresentation()
        #expect(stored.count == 2 * keys)
        for prefix in ["a", "b"] {
            for key in 0..<keys {
                #expect(stored["\(prefix)\(key)"] == .string(PreferencesWorker.value(count - keys + key)))
            }
        }
    }

    @Test("a write by another process is seen by this one's next read")
    func nextReadSeesOtherProcess() async throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        let preferences = try await Preferences.open(at: file)
        #expect(preferences.value(forName: "p0") == nil)
        let (process, output) = try PreferencesWorker.startWriting(file: file, prefix: "p", count: 3, keys: 1)
        try await waitForExit(process, readingToEnd: output)
        #expect(preferences.value(forName: "p0") == .string(PreferencesWorker.value(2)))
    }
}
