import Foundation
import Logging
import StowageCache
import StowageCore
import StowageTestSupport
import StowageTesting
import Synchronization
import Testing

/// The end of a replay of the changes a shared level missed: a change kept after the replay's
/// last pass found nothing waiting, but before the replay stopped counting as under way, is
/// sent all the same. A replay asked for in that moment (the recovery that follows the change's
/// outage, or its retry firing) returns at once, since one is under way; without a pass after
/// the replay ends, nothing would try again while the level stays up, and a purge made during
/// the outage would never reach the other nodes.
@Suite("Shared level: a change kept as a replay ends")
struct SharedReplayEndTests {
    /// A log handler that holds the thread logging the replay's closing notice (which comes
    /// after its last pass and before it stops counting as under way) until released.
    final class ReplayEndGate: Sendable {
        private let holding = Atomic<Bool>(false)
        private let held = Atomic<Bool>(false)
        private let gate = DispatchSemaphore(value: 0)

        var isHolding: Bool { holding.load(ordering: .acquiring) }

        func release() { gate.signal() }

        fileprivate func log(_ message: String) {
            guard message.hasPrefix("sent the changes"), !held.exchange(true, ordering: .relaxed) else { return }
            holding.store(true, ordering: .releasing)
            gate.wait()
        }

        struct Handler: LogHandler {
            let gate: ReplayEndGate
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) { gate.log("\(event.message)") }
        }
    }

    @Test("a change kept while a replay ends is sent by it, not left to a replay that found it under way")
    func changeKeptAsReplayEnds() async throws {
        let level = InMemorySharedLevel()
        defer { level.shutDown() }
        let scratch = try TemporaryDirectory()
        let gate = ReplayEndGate()
        var disk = DiskCache.Configuration(name: "replay-end")
        disk.logger = Logger(label: "replay-end") { _ in ReplayEndGate.Handler(gate: gate) }
        var memory = MemoryCache<String, String>.Configuration(name: "replay-end")
        memory.memoryPressureSource = nil
        var options = SharedTierOptions()
        // Never advanced: the retry scheduled for the first kept change never fires, as if it
        // had fired while the replay below was ending, and returned.
        options.waitClock = SteppedClock()
        let cache = HybridCache(
            memory: try MemoryCache(configuration: memory),
            disk: try DiskCache(directory: scratch.url.appending(path: "cache"), configuration: disk),
            serializer: StringSerializer(),
            shared: level.node(),
            configuration: HybridCache.Configuration(sharedLevel: options)
        )
        level.goDown(interruptingInvalidations: false)
        try await cache.setValue("first", forKey: "k1")
        #expect(cache.pendingSharedWrites == 1)
        level.comeBack(notifying: false)
        // The replay sends k1, then stops at its closing notice.
        let replay = Task { await cache.apply(.all) }
        try await eventually { gate.isHolding }
        #expect(level.data(forKey: "k1") != nil)
        // Another outage, and a change kept in it; the recovery's replay finds one under way.
        level.goDown(interruptingInvalidations: false)
        try await cache.setValue("second", forKey: "k2")
        level.comeBack(notifying: false)
        await cache.apply(.all)
        gate.release()
        await replay.value
        #expect(cache.pendingSharedWrites == 0)
        #expect(level.data(forKey: "k2") != nil, "k2 waits with the level up and nothing to send it")
    }
}
