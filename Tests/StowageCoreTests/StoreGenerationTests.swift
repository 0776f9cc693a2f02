import Foundation
import StowageTestSupport
import Testing

@testable import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("StoreGeneration")
struct StoreGenerationTests {
    @Test("an advance through one mapping is seen through every other at once")
    func advanceIsShared() throws {
        let scratch = try TemporaryDirectory()
        let first = try StoreGeneration(directory: scratch.path)
        let second = try StoreGeneration(directory: scratch.path)
        let watch = GenerationWatch(second)
        var emptied = 0
        _ = watch.check { emptied += 1 }
        #expect(emptied == 0)
        first.advance()
        #expect(second.value == first.value)
        let seen = watch.check { emptied += 1 }
        #expect(emptied == 1)
        #expect(watch.isCurrent(seen))
        _ = watch.check { emptied += 1 }
        #expect(emptied == 1)  // once per change
        first.advance()
        #expect(!watch.isCurrent(seen))  // a fill that raced the clear knows
    }

    @Test("retirement is seen by open handles, keeps emptying, and a new open starts a fresh file")
    func retirementIsPerFile() throws {
        let scratch = try TemporaryDirectory()
        let open = try StoreGeneration(directory: scratch.path)
        let watch = GenerationWatch(open)
        let directory = openDirectory(scratch.path)
        defer { close(directory) }
        #expect(StoreGeneration.retireStores(named: [StoreGeneration.fileName], in: directory) == 1)
        #expect(open.isRetired)
        var emptied = 0
        _ = watch.check { emptied += 1 }
        _ = watch.check { emptied += 1 }
        #expect(emptied == 2)  // a removed store's tier never keeps anything
        let fresh = try StoreGeneration(directory: scratch.path)
        #expect(!fresh.isRetired)
        #expect(open.isRetired)
    }

    @Test("retiring leaves alone files that only carry a marker's name")
    func impostorsUntouched() throws {
        let scratch = try TemporaryDirectory()
        let impostor = try scratch.write(StoreGeneration.fileName, bytes: 16, byte: 0x41)
        let notes = try scratch.write("notes.stowprefs", bytes: 4096, byte: 0x42)
        try scratch.makeDirectory("dir.stowprefs")
        let before = try [Data(contentsOf: impostor), Data(contentsOf: notes)]
        let directory = openDirectory(scratch.path)
        defer { close(directory) }
        let names = [StoreGeneration.fileName, "notes.stowprefs", "dir.stowprefs", "missing.stowprefs"]
        #expect(StoreGeneration.retireStores(named: names, in: directory) == 0)
        #expect(try [Data(contentsOf: impostor), Data(contentsOf: notes)] == before)
    }

    @Test("clearing a directory retires the stores in it before deleting them")
    func clearingRetires() throws {
        let scratch = try TemporaryDirectory()
        try scratch.makeDirectory("a/b/store")
        let generation = try StoreGeneration(directory: scratch.path + "/a/b/store")
        _ = try scratch.write("a/b/store/index", bytes: 100)
        let report = try DirectoryClearing.clearContents(of: scratch.url)
        #expect(report.isComplete)
        #expect(generation.isRetired)
    }
}

/// `open(2)` of a directory for reading, under a name the tests' `open` variables do not shadow.
private func openDirectory(_ path: String) -> Int32 {
    open(path, O_RDONLY | O_DIRECTORY)
}
