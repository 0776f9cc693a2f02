import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowagePreferences

/// One flipped byte costs the damaged record only; the header never
/// overrules the records; damage is reported and the damaged file kept.
@Suite("preferences recovery")
struct PreferencesRecoveryTests {
    /// Writes `count` keys (`key0` … with values "value 0" …) and returns the file's bytes, once
    /// the writing handle has let the suite go: its shared hold on `SUITE.users` goes with its
    /// last reference, which a background task may keep a moment on a loaded machine, and an open
    /// beside it is not alone, so it reports damage without repairing it or keeping a copy. The
    /// exclusive lock below waits for that release (the event), not for a time.
    static func write(_ count: Int, to file: URL) throws -> [UInt8] {
        do {
            let preferences = try Preferences.open(at: file)
            for index in 0..<count { try preferences.set(.string("value \(index)"), forName: "key\(index)") }
        }
        let users = try LockFile(path: file.path(percentEncoded: false) + ".users")
        try users.lock(.exclusive)
        users.unlock()
        return try [UInt8](Data(contentsOf: file))
    }

    /// Opens `file` and returns the values read and the recovery report.
    static func open(_ file: URL) throws -> (values: [String: PreferenceValue], recovery: PreferencesRecovery?) {
        let preferences = try Preferences.open(at: file)
        return (preferences.dictionaryRepresentation(), preferences.recovery)
    }

    static func checkValues(_ values: [String: PreferenceValue]) {
        for (key, value) in values {
            #expect(value == .string("value \(key.dropFirst(3))"), "\(key) read back wrong")
        }
    }

    @Test("one byte flipped in the middle of 50 records: 49 read back, the loss is reported, the file kept")
    func flipInTheMiddle() throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        var bytes = try Self.write(50, to: file)
        let position = PreferencesLog.headerSize + (bytes.count - PreferencesLog.headerSize) / 2
        bytes[position] ^= 0x20
        try Data(bytes).write(to: file)

        let (values, recovery) = try Self.open(file)
        #expect(values.count == 49)
        Self.checkValues(values)
        let report = try #require(recovery)
        #expect(report.regions.count == 1)
        let copy = try #require(report.damagedCopy)
        #expect(try Data(contentsOf: URL(filePath: copy)) == Data(bytes), "the damaged file is kept as it was")

        // Repaired: the next open is clean and still has the 49.
        let (again, secondRecovery) = try Self.open(file)
        #expect(again.count == 49 && secondRecovery == nil)
    }

    @Test("the damaged file's copy is dated by the configuration's clock")
    func damagedCopyIsDatedByTheClock() throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        var bytes = try Self.write(10, to: file)
        bytes[PreferencesLog.headerSize + (bytes.count - PreferencesLog.headerSize) / 2] ^= 0x20
        try Data(bytes).write(to: file)
        var configuration = Preferences.Configuration()
        let clock = ManualClock()
        configuration.clock = clock.cacheClock
        let preferences = try Preferences.open(at: file, configuration: configuration)
        let copy = try #require(preferences.recovery?.damagedCopy)
        #expect(copy == file.path + ".damaged-\(Int(clock.secondsSince1970))")
    }

    @Test("a byte flipped at any position of a 12-record log costs at most one record, never a wrong value")
    func flipAnywhere() throws {
        let scratch = try PreferencesTestDirectory()
        let original = try Self.write(12, to: scratch.file("reference.stowprefs"))
        for position in PreferencesLog.headerSize..<original.count {
            let file = scratch.file("flip-\(position).stowprefs")
            var bytes = original
            bytes[position] ^= 0x5A
            try Data(bytes).write(to: file)
            let (values, recovery) = try Self.open(file)
            #expect(values.count >= 11, "flipping byte \(position) lost \(12 - values.count) records")
            Self.checkValues(values)
            if values.count == 11 { #expect(recovery != nil, "a lost committed record is reported (byte \(position))") }
            if let copy = recovery?.damagedCopy { try? FileManager.default.removeItem(atPath: copy) }
            try? FileManager.default.removeItem(at: file)
        }
    }

    @Test("400 records with bytes flipped at 10%, 50% and 90%: 397 read back", arguments: [[0.1, 0.5, 0.9]])
    func severalFlips(fractions: [Double]) throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        var bytes = try Self.write(400, to: file)
        for fraction in fractions {
            bytes[PreferencesLog.headerSize + Int(Double(bytes.count - PreferencesLog.headerSize) * fraction)] ^= 0xFF
        }
        try Data(bytes).write(to: file)
        let (values, recovery) = try Self.open(file)
        #expect(values.count == 397)
        Self.checkValues(values)
        #expect(recovery?.regions.count == 3)
    }

    @Test(
        "a wrong committed end in the header loses nothing: too small, zero, inside a record, past the file",
        arguments: [4_096, 0, 4_100, 1 << 40]
    )
    func wrongCommittedEnd(committedEnd: Int) throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        var bytes = try Self.write(50, to: file)
        withUnsafeBytes(of: UInt64(committedEnd).littleEndian) { bytes.replaceSubrange(16..<24, with: $0) }
        try Data(bytes).write(to: file)
        let (values, _) = try Self.open(file)
        #expect(values.count == 50, "the records decide, not the header")
        Self.checkValues(values)
        // And the store goes on: a new value after the repaired end reads back.
        do {
            let preferences = try Preferences.open(at: file)
            try preferences.set(.string("value 50"), forName: "key50")
        }
        #expect(try Self.open(file).values.count == 51)
    }

    @Test("opening removes the file's temporaries a dead process left; a running process's and another file's stay")
    func leftoverTemporaries() throws {
        let scratch = try PreferencesTestDirectory()
        let file = scratch.file()
        let dead = try deadProcessID()
        // Killed mid-compaction (dead), a compaction still under way (running), another suite's.
        let gone = "suite.stowprefs.tmp-\(dead)-1"
        let kept = ["suite.stowprefs.tmp-\(getpid())-2", "other.stowprefs.tmp-\(dead)-3"]
        for name in [gone] + kept { try Data().write(to: scratch.url.appending(path: name)) }
        let preferences = try Preferences.open(at: file)
        try preferences.set(.int(1), forName: "opened")
        let temporaries = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter {
            $0.contains(".tmp-")
        }
        #expect(temporaries.sorted() == kept.sorted())
    }
}
