import NIOCore
import StowageLoopClock
import Synchronization

/// When the consumer of an ``UpstreamResponseBody`` last took a part: the read timeout counts
/// the upstream's silence only while the proxy waits for it, from the later of the upstream's
/// last bytes and the consumer's last take, and not before the consumer has started.
///
/// A consumer that has not started yet (its task not scheduled, on a starved machine) is not the
/// upstream's silence, as AsyncHTTPClient's read timeout, armed only while it waits for a read
/// it asked for, is not. Shared between the consumer's task and the connection's event loop.
final class BodyConsumption: Sendable {
    /// `NIODeadline.uptimeNanoseconds` of the last take; 0 before the first.
    private let lastTake = Atomic<UInt64>(0)
    /// The clock the connection's deadlines are on.
    private let clock: LoopClock

    init(clock: LoopClock) {
        self.clock = clock
    }

    /// Notes a take, now (1 ns at the earliest: 0 means none yet, and a test clock starts at 0).
    func took() {
        lastTake.store(max(1, clock.now().uptimeNanoseconds), ordering: .relaxed)
    }

    /// When the consumer last took a part; `nil` before the first.
    var last: NIODeadline? {
        let nanoseconds = lastTake.load(ordering: .relaxed)
        return nanoseconds == 0 ? nil : .uptimeNanoseconds(nanoseconds)
    }
}
