import Foundation
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHTTPCache

/// `AnswerSpill`: the anonymous file of spilled answers. What it gives back is what was written,
/// or nothing: never bytes of another generation, of a torn read or garbled on disk.
@Suite("Answer spill file")
struct AnswerSpillTests {
    @Test("a record reads back whole; the file has no name in the directory")
    func roundTrip() throws {
        let scratch = try TemporaryDirectory()
        let spill = try #require(AnswerSpill(directory: scratch.url.path, capacity: 1 << 20))
        let place = try #require(spill.append(Array("key".utf8), Array("head".utf8), [], Array("body".utf8)))
        #expect(spill.read(place) == Array("keyheadbody".utf8))
        #expect(spill.byteCount == 11)
        let names = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path)
        #expect(names.isEmpty, "\(names)")
    }

    @Test("empty records, records over a sixteenth of the capacity and a zero capacity are refused")
    func bounds() throws {
        let scratch = try TemporaryDirectory()
        #expect(AnswerSpill(directory: scratch.url.path, capacity: 0) == nil)
        #expect(AnswerSpill(directory: scratch.url.path, capacity: -1) == nil)
        #expect(AnswerSpill(directory: scratch.url.path + "/missing", capacity: 1 << 20) == nil)
        let spill = try #require(AnswerSpill(directory: scratch.url.path, capacity: 1_600))
        #expect(spill.append([]) == nil)
        #expect(spill.append([UInt8](repeating: 1, count: 101)) == nil)
        #expect(spill.append([UInt8](repeating: 1, count: 100)) != nil)
    }

    @Test("past its capacity the file starts again: every earlier place reads as nothing")
    func wrapEndsEarlierPlaces() throws {
        let scratch = try TemporaryDirectory()
        let spill = try #require(AnswerSpill(directory: scratch.url.path, capacity: 1_600))
        let places = (0..<16).compactMap { n in spill.append([UInt8](repeating: UInt8(n), count: 100)) }
        #expect(places.count == 16)
        #expect(places.allSatisfy { spill.read($0) != nil })
        let next = try #require(spill.append([UInt8](repeating: 0xEE, count: 100)))
        #expect(places.allSatisfy { spill.read($0) == nil })
        #expect(spill.read(next) == [UInt8](repeating: 0xEE, count: 100))
        #expect(spill.byteCount == 100)
    }

    @Test("removeAll empties the file: nothing written before reads back")
    func removeAllEndsEveryPlace() throws {
        let scratch = try TemporaryDirectory()
        let spill = try #require(AnswerSpill(directory: scratch.url.path, capacity: 1 << 20))
        let place = try #require(spill.append(Array("secret response".utf8)))
        spill.removeAll()
        #expect(spill.read(place) == nil)
        #expect(spill.byteCount == 0)
    }

    @Test("a byte changed in the file, or a place that claims more than was written, reads as nothing")
    func damagedBytesAreNothing() throws {
        let scratch = try TemporaryDirectory()
        let spill = try #require(AnswerSpill(directory: scratch.url.path, capacity: 1 << 20))
        let place = try #require(spill.append([UInt8](repeating: 7, count: 64)))
        let longer = AnswerSpill.Place(
            generation: place.generation,
            length: place.length + 10,
            offset: place.offset,
            checksum: place.checksum
        )
        #expect(spill.read(longer) == nil)
        let shifted = AnswerSpill.Place(
            generation: place.generation,
            length: place.length,
            offset: place.offset + 1,
            checksum: place.checksum
        )
        #expect(spill.read(shifted) == nil)
        let elsewhere = AnswerSpill.Place(
            generation: place.generation,
            length: place.length,
            offset: 1 << 40,
            checksum: place.checksum
        )
        #expect(spill.read(elsewhere) == nil)
        #expect(spill.read(place) == [UInt8](repeating: 7, count: 64))
    }

    @Test("eight threads appending and reading while the file starts again: every read is its own bytes or nothing")
    func concurrentAppendsAndWraps() async throws {
        let scratch = try TemporaryDirectory()
        let spill = try #require(AnswerSpill(directory: scratch.url.path, capacity: 64 << 10))
        final class Counts: Sendable {
            let wrong = Atomic<Int>(0)
            let read = Atomic<Int>(0)
        }
        let counts = Counts()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for round in 0..<2_000 {
                        let byte = UInt8(truncatingIfNeeded: worker * 31 + round)
                        let record = [UInt8](repeating: byte, count: 100 + (round % 300))
                        guard let place = spill.append(record) else { continue }
                        if let back = spill.read(place) {
                            counts.read.add(1, ordering: .relaxed)
                            if back != record { counts.wrong.add(1, ordering: .relaxed) }
                        }
                    }
                }
            }
        }
        #expect(counts.wrong.load(ordering: .relaxed) == 0)
        #expect(counts.read.load(ordering: .relaxed) > 0)
    }
}
