import StowageCore
import StowageHTTPCache
import Synchronization

/// Charges the working memory of the proxy's requests in flight to the cache's
/// `memoryCapacity`, so that `--memory-capacity` bounds the proxy's memory under load and not
/// only the memory level (Redis counts its clients' buffers against `maxmemory` the same way).
///
/// A request answered off the event loop (a miss, a revalidation, a hit read from disk) holds
/// about 110 KiB while it runs: its async frames, its buffers and channel state, and the
/// dispatch thread of its disk work with that thread's stack and allocator cache (measured
/// 105–135 KiB for each connection with a request in flight, release build on Linux:
/// CachingProxyGuide.md, "Memory"). It is counted from its head until its response's last byte
/// is written (`ProxyServer`): a body streamed from the upstream or from a file keeps its
/// buffers and tasks until then. Memory hits answered on the event loop do not come here: they
/// hold nothing past their write.
///
/// What is set aside (`HTTPCache.setAsideMemory(_:)`, up to half the capacity) rises at once
/// with the most requests in flight, and falls only when a ``window`` has passed without that
/// many: to the most of the window that ended, noticed by the next request that begins or by
/// ``WorkingMemoryWindows`` (every quarter window). So a burst keeps its memory set aside for
/// one to two windows, long enough for the next burst of a steady load, and a burst that is over
/// (hostile clients holding requests open, then leaving) gives the level its room back. The
/// memory the burst's requests freed stays with the allocator and is what the level grows back
/// into, so the peak does not rise for it.
final class WorkingMemoryCharge: Sendable {
    /// What one request in flight is charged: the top of the measured 105–135 KiB.
    static let bytesPerRequest = 128 * 1024
    /// How long the most requests in flight at once is kept set aside after it passes.
    static let window: Duration = .seconds(60)

    private let cache: HTTPCache
    /// Where the ``window`` is measured: the proxy's `timeoutClock`.
    let clock: ElapsedClock
    private let inFlight = Atomic<Int>(0)
    /// The requests whose memory is set aside now; read without the lock on every request.
    private let setAsideFor = Atomic<Int>(0)
    /// The most requests in flight at once since the current window began.
    private let windowMost = Atomic<Int>(0)
    /// When the current window ends, in nanoseconds of ``clock``.
    private let windowEnd = Atomic<Int64>(WorkingMemoryCharge.window.saturatingNanoseconds)
    /// Held while the amount set aside moves, so that moves are made in order.
    private let moving = Mutex<Void>(())
    /// The most requests whose memory fits in what the cache sets aside (half its capacity).
    private let mostCharged: Int

    /// - Parameter clock: Where the ``window`` is measured (the proxy's `timeoutClock`).
    init(cache: HTTPCache, clock: any Clock<Duration>) {
        self.cache = cache
        mostCharged = HTTPCache.mostSetAside(of: cache.configuration.memoryCapacity) / Self.bytesPerRequest + 1
        self.clock = ElapsedClock(clock)
    }

    /// Counts a request in flight, until ``end()``: sets aside the memory of more requests when
    /// more are in flight than it is set aside for, and ends the window when it is over.
    func begin() {
        // Sequentially consistent, against the lowering in `endWindow()`: either this request
        // reads the lowered amount and raises it, or the lowering reads this request in flight.
        let count = inFlight.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
        recordInWindow(count)
        if count > setAsideFor.load(ordering: .sequentiallyConsistent), count <= mostCharged {
            raise(to: count)
        }
        endWindowIfDue()
    }

    /// Ends the current window if it is over: on each request that begins, and from
    /// ``WorkingMemoryWindows`` for a proxy whose requests the event loop answers.
    func endWindowIfDue() {
        if clock.now.saturatingNanoseconds >= windowEnd.load(ordering: .relaxed) {
            endWindow()
        }
    }

    /// Counts a request in flight no more.
    func end() {
        inFlight.wrappingSubtract(1, ordering: .relaxed)
    }

    /// The requests whose memory is set aside now: the most in flight at once in the current
    /// window and the one before, up to the most whose memory is charged.
    var peak: Int { setAsideFor.load(ordering: .relaxed) }

    /// The requests in flight now.
    var current: Int { inFlight.load(ordering: .relaxed) }

    private func raise(to count: Int) {
        moving.withLock { _ in
            guard count > setAsideFor.load(ordering: .relaxed) else { return }
            setAsideFor.store(count, ordering: .relaxed)
            cache.setAsideMemory(count * Self.bytesPerRequest)
        }
    }

    /// Starts the next window, and sets aside no more than the most requests in flight at once
    /// in the one that ended (or in flight now, if more).
    private func endWindow() {
        moving.withLock { _ in
            let now = clock.now.saturatingNanoseconds
            guard now >= windowEnd.load(ordering: .relaxed) else { return }
            let inFlightNow = inFlight.load(ordering: .relaxed)
            // Exchanged, not read then stored: a request that begins in between is kept in the
            // window that ended or in the next.
            let most = min(max(windowMost.exchange(inFlightNow, ordering: .relaxed), inFlightNow), mostCharged)
            let window = Self.window.saturatingNanoseconds
            windowEnd.store(now > Int64.max - window ? Int64.max : now + window, ordering: .relaxed)
            guard most < setAsideFor.load(ordering: .relaxed) else { return }
            setAsideFor.store(most, ordering: .sequentiallyConsistent)
            // A request that began after `inFlightNow` was read, and read the amount before it
            // was lowered, did not raise it (a store then a load on each side, as in Dekker's
            // mutual exclusion): the requests in flight now are counted after the store.
            let inFlightAfter = inFlight.load(ordering: .sequentiallyConsistent)
            recordInWindow(inFlightAfter)
            let lowered = max(most, min(inFlightAfter, mostCharged))
            setAsideFor.store(lowered, ordering: .relaxed)
            cache.setAsideMemory(lowered * Self.bytesPerRequest)
        }
    }

    /// Raises the most requests in flight at once in the current window to `count`.
    private func recordInWindow(_ count: Int) {
        var most = windowMost.load(ordering: .relaxed)
        while count > most {
            let (exchanged, original) = windowMost.compareExchange(
                expected: most,
                desired: count,
                ordering: .relaxed
            )
            if exchanged { break }
            most = original
        }
    }
}
