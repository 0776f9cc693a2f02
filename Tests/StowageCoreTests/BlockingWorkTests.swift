import Foundation
import StowageCore
import Synchronization
import Testing

// The limit catches a hang only: the pool is shared with every suite running at once, some of
// which hold lanes on purpose (a cache waiting for another process's lock), so a loaded run may
// take far longer than the work itself.
@Suite("BlockingWork", .timeLimit(.minutes(10)))
struct BlockingWorkTests {
    @Test("at most `limit` items run at once; the rest wait without a thread and all finish")
    func bounded() async {
        final class Gauge: Sendable {
            let running = Atomic<Int>(0)
            let highest = Atomic<Int>(0)
        }
        let gauge = Gauge()
        let count = 3 * BlockingWork.limit
        let results = await withTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                group.addTask {
                    await BlockingWork.run {
                        let now = gauge.running.add(1, ordering: .sequentiallyConsistent).newValue
                        var seen = gauge.highest.load(ordering: .sequentiallyConsistent)
                        while now > seen {
                            let (exchanged, original) = gauge.highest.compareExchange(
                                expected: seen,
                                desired: now,
                                ordering: .sequentiallyConsistent
                            )
                            if exchanged { break }
                            seen = original
                        }
                        usleep(20_000)  // a slow disk
                        gauge.running.subtract(1, ordering: .sequentiallyConsistent)
                        return index
                    }
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == Array(0..<count))
        #expect(gauge.highest.load(ordering: .sequentiallyConsistent) <= BlockingWork.limit)
        #expect(gauge.highest.load(ordering: .sequentiallyConsistent) >= 2)
    }

    // A leaked slot would make the calls after the first `limit` wait for ever.
    @Test("errors come back to the caller and free their slot")
    func errors() async throws {
        struct Failure: Error {}
        for _ in 0..<(2 * BlockingWork.limit) {
            await #expect(throws: Failure.self) { try await BlockingWork.run { () throws -> Int in throw Failure() } }
        }
        #expect(await BlockingWork.run { 42 } == 42)
    }
}
