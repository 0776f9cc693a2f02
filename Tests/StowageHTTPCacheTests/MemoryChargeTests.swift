import Foundation
import HTTPTypes
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// A cache stays within the memory it was given (issue 45): what the memory level charges an
/// entry is the heap the entry holds, so `memoryCapacity` bounds the bytes the process keeps for
/// it, not only the bytes of its serialized form.
@Suite struct MemoryChargeTests {
    @Test(
        "a memory-only cache filled far past its capacity holds at most 1.25 x memoryCapacity of heap",
        .enabled(if: HeapInUse.bytes() != nil, "glibc's malloc_info measures the heap")
    )
    func heapStaysWithinCapacity() async throws {
        let capacity = 4_000_000
        // About 900 URLs fit (records, body and prepared answer, about 4.5 KB charged each): four
        // times as many go through, so the level evicts for most of the run.
        let process = TestWorker.process("http-cache", ["heap", String(capacity), "4000"])
        let output = childPipe()
        process.standardOutput = output
        try process.run()
        let printed = await BlockingWork.run { output.fileHandleForReading.readDataToEndOfFile() }
        #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
        let figures = String(decoding: printed, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap {
            Int($0)
        }
        try #require(figures.count == 2, "the worker printed \(String(decoding: printed, as: UTF8.self))")
        let (grown, charged) = (figures[0], figures[1])
        #expect(charged <= capacity)
        #expect(charged > capacity * 3 / 4, "the level was full")
        #expect(
            Double(grown) <= 1.25 * Double(capacity),
            "the heap grew by \(grown) bytes for \(charged) charged (capacity \(capacity))"
        )
    }

    @Test("a record is charged what its decoded form holds, which is more than its encoded bytes")
    func recordChargeCoversDecodedForm() throws {
        var response = HTTPResponse(status: .ok)
        response.headerFields[.date] = "Sun, 29 Nov 2026 08:00:00 GMT"
        response.headerFields[.lastModified] = "Sun, 29 Nov 2026 07:59:00 GMT"
        response.headerFields[.contentType] = "application/octet-stream"
        response.headerFields[.cacheControl] = "max-age=3600"
        let stored = StoredResponse(response: response, requestSeconds: 1, responseSeconds: 2, bodyLength: 1_024)
        let record = VariantRecord(stored: stored, bodyKey: HTTPCache.makeBodyKey(), isMemoryOnly: false)
        let encoded = VariantRecord.encode([record])
        let decoded = try VariantRecord.decode(Data(encoded))
        let charge = HTTPCache.MemoryEntry.variants(decoded).charge(forKey: "m http://127.0.0.1:18111/u/0/1")
        // Four fields of 50-odd bytes in an array, three strings over 15 bytes, the body key, the
        // parsed Cache-Control, the record in its array, the key and the slot.
        #expect(charge > 2 * encoded.count, "charged \(charge) for \(encoded.count) encoded bytes")
    }
}
