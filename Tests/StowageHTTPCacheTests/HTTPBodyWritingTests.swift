import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHTTPCache

@Suite("HTTPBody(length:writing:): a pushed body read as a stream")
struct HTTPBodyWritingTests {
    @Test("The chunks arrive in order, and each write waits until its chunk is taken")
    func chunksInOrderWithBackpressure() async throws {
        let written = Mutex(0)
        let pipe = Mutex<BodyPipe?>(nil)
        let body = HTTPBody(length: nil) { writer in
            pipe.withLock { $0 = writer.pipe }
            for index in 0..<3 {
                try await writer.write([UInt8(index)])
                written.withLock { $0 += 1 }
            }
        }
        var iterator = body.makeAsyncIterator()
        #expect(try await iterator.next() == [0])
        // The writer is parked on its second chunk until it is read: one chunk in flight.
        try await eventually { pipe.withLock { $0?.hasParkedWriter } == true }
        #expect(written.withLock { $0 } == 1)
        #expect(try await iterator.next() == [1])
        #expect(try await iterator.next() == [2])
        #expect(try await iterator.next() == nil)
        #expect(written.withLock { $0 } == 3)
    }

    @Test("What the writer throws mid-way reaches the reader after the chunks before it")
    func writerErrorReachesReader() async throws {
        let body = HTTPBody(length: nil) { writer in
            try await writer.write(Array("first".utf8))
            throw TestFailure("the handler failed")
        }
        var iterator = body.makeAsyncIterator()
        #expect(try await iterator.next() == Array("first".utf8))
        await #expect(throws: TestFailure.self) { _ = try await iterator.next() }
    }

    @Test("A reader that stops reading cancels the writer: its pending write throws")
    func droppedReaderCancelsWriter() async throws {
        let outcome = Mutex<String?>(nil)
        let body = HTTPBody(length: nil) { writer in
            do {
                while true { try await writer.write([1, 2, 3]) }
            } catch is CancellationError {
                outcome.withLock { $0 = "cancelled" }
            }
        }
        do {
            var iterator = body.makeAsyncIterator()
            #expect(try await iterator.next() == [1, 2, 3])
        }
        try await eventually { outcome.withLock { $0 } == "cancelled" }
    }

    @Test("A body nobody iterates never starts its writer")
    func unreadBodyNeverWrites() async throws {
        final class Sentinel: Sendable {}
        let started = Mutex(false)
        weak var captured: Sentinel?
        do {
            let sentinel = Sentinel()
            captured = sentinel
            let body = HTTPBody(length: 3) { writer in
                withExtendedLifetime(sentinel) {}
                started.withLock { $0 = true }
                try await writer.write([1, 2, 3])
            }
            #expect(body.length == 3)
        }
        // The body is gone, and its writer with it: nothing holds the closure (a writer started
        // when the body was made would hold it until it had run), and it never ran.
        #expect(captured == nil)
        #expect(started.withLock { $0 } == false)
        let body = HTTPBody(length: 3) { writer in
            started.withLock { $0 = true }
            try await writer.write([1, 2, 3])
        }
        #expect(try await body.collect(upTo: 10) == [1, 2, 3])
        #expect(started.withLock { $0 })
    }
}
