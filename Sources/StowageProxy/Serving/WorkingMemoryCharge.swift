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
/// buffers and tasks until then. The allocator keeps that memory once the requests are
/// done, so what is set aside follows the most requests ever in flight at once, never
/// shrinking, up to half the capacity (`HTTPCache.setAsideMemory(_:)`). Memory hits answered on
/// the event loop do not come here: they hold nothing past their write.
final class WorkingMemoryCharge: Sendable {
    /// What one request in flight is charged: the top of the measured 105–135 KiB.
    static let bytesPerRequest = 128 * 1024

    private let cache: HTTPCache
    private let inFlight = Atomic<Int>(0)
    /// The most requests in flight at once so far; read without the lock on every request.
    private let mostInFlight = Atomic<Int>(0)
    /// Held while the amount set aside moves up, so two requests that each raise the most in
    /// flight set the amounts aside in order.
    private let raising = Mutex<Void>(())
    /// The most requests whose memory fits in what the cache sets aside (half its capacity).
    private let mostCharged: Int

    init(cache: HTTPCache) {
        self.cache = cache
        mostCharged = HTTPCache.mostSetAside(of: cache.configuration.memoryCapacity) / Self.bytesPerRequest + 1
    }

    /// Counts a request in flight, until ``end()``; the first time this many are in flight,
    /// sets their memory aside.
    func begin() {
        let count = inFlight.wrappingAdd(1, ordering: .relaxed).newValue
        if count > mostInFlight.load(ordering: .relaxed), count <= mostCharged {
            raise(to: count)
        }
    }

    /// Counts a request in flight no more.
    func end() {
        inFlight.wrappingSubtract(1, ordering: .relaxed)
    }

    /// The most requests in flight at once so far, counted up to the most whose memory is
    /// charged (past half the capacity it stays there).
    var peak: Int { mostInFlight.load(ordering: .relaxed) }

    /// The requests in flight now.
    var current: Int { inFlight.load(ordering: .relaxed) }

    private func raise(to count: Int) {
        raising.withLock { _ in
            guard count > mostInFlight.load(ordering: .relaxed) else { return }
            mostInFlight.store(count, ordering: .relaxed)
            cache.setAsideMemory(count * Self.bytesPerRequest)
        }
    }
}
