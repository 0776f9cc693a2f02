import Foundation
import StowagePreferences
import StowageTestSupport
import Synchronization
import Testing

@Suite("Preferences observation")
struct PreferencesObservationTests {
    @Test("a callback fires once per change, not for a set of the same value; removal reports the default")
    func callbackOncePerChange() throws {
        let scratch = try PreferencesTestDirectory()
        let preferences = try Preferences.open(at: scratch.file())
        let volume = Preferences.Key<Int>("volume", default: 5)
        let seen = Mutex<[Int]>([])
        let observation = preferences.observe(volume) { value in seen.withLock { $0.append(value) } }
        try preferences.set(7, for: volume)
        try preferences.set(7, for: volume)
        try preferences.set(8, for: volume)
        try preferences.set(1, for: .init("other", default: 0))
        try preferences.remove(volume)
        #expect(seen.withLock { $0 } == [7, 8, 5])

        observation.cancel()
        try preferences.set(9, for: volume)
        #expect(seen.withLock { $0 } == [7, 8, 5])
    }

    @Test("changes(for:) is an AsyncSequence of the new values")
    func asyncSequence() async throws {
        let scratch = try PreferencesTestDirectory()
        let preferences = try await Preferences.open(at: scratch.file())
        let name = Preferences.Key<String>("name", default: "")
        let stream = preferences.changes(for: name)
        try preferences.set("a", for: name)
        try preferences.set("b", for: name)
        try preferences.set("b", for: name)
        try preferences.set("c", for: name)
        var received: [String] = []
        for await value in stream {
            received.append(value)
            if received.count == 3 { break }
        }
        #expect(received == ["a", "b", "c"])
    }

    @Test("another process's change reaches an observer without this process touching the suite")
    func otherProcessChange() async throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        var configuration = Preferences.Configuration()
        configuration.observationInterval = .milliseconds(20)
        let preferences = try await Preferences.open(at: file, configuration: configuration)
        let key = Preferences.Key<String>("remote0", default: "")
        let stream = preferences.changes(for: key)
        let (process, output) = try PreferencesWorker.startWriting(file: file, prefix: "remote", count: 1, keys: 1)
        _ = output.readDataToEndOfFile()
        #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
        // The polling timer applies the other process's record and notifies.
        var iterator = stream.makeAsyncIterator()
        let value = await iterator.next()
        #expect(value == PreferencesWorker.value(0))
    }

    @Test("another process's change reaches an observer when the observation clock passes the interval")
    func otherProcessChangeFollowsClock() async throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        let clock = SteppedClock()
        var configuration = Preferences.Configuration()
        configuration.observationInterval = .seconds(60)
        configuration.observationClock = clock
        let preferences = try await Preferences.open(at: file, configuration: configuration)
        let key = Preferences.Key<String>("remote0", default: "")
        let seen = Mutex<[String]>([])
        let observation = preferences.observe(key) { value in seen.withLock { $0.append(value) } }
        defer { observation.cancel() }
        try await eventually { clock.sleeperCount == 1 }
        let (process, output) = try PreferencesWorker.startWriting(file: file, prefix: "remote", count: 1, keys: 1)
        _ = output.readDataToEndOfFile()
        #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
        // Nothing here touches the suite, so only a poll can bring the change.
        #expect(seen.withLock { $0 }.isEmpty)
        clock.advance(by: .seconds(60))
        try await eventually { seen.withLock { $0 } == [PreferencesWorker.value(0)] }
        // The poll goes on at the next interval.
        try await eventually { clock.sleeperCount == 1 }
    }
}
