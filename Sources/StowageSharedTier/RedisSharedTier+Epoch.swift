import Foundation
import StowageCache
import StowageCore
import StowageRedis

// The shared level's epoch: a random id stored once under `NS:epoch`, with no expiry. A server
// that restarts empty, or is flushed, loses it, and the first node to ask afterwards stores a
// new one. A node whose invalidation channel comes back after a gap compares the epoch with the
// one it knew: the same epoch means the values are still there and only messages were missed
// (`.all`: confirm local copies against them); another epoch means the values are gone
// (`.emptied`: nothing can confirm or refute a local copy, so local copies stand).
//
// In a cluster the epoch lives on the master of its slot: another master that restarts empty
// is not noticed, its keys read as absent, and local copies of them are dropped and loaded
// again — the safe direction. A server that evicts the epoch key under `maxmemory` makes an
// outage look like an emptying: local copies are kept unconfirmed until they expire.

extension RedisSharedTier {
    /// KEYS: epoch. ARGV: a new random id. Stores it unless an epoch is there; returns the epoch.
    static let epochScript = """
        redis.call('SET', KEYS[1], ARGV[1], 'NX')
        return redis.call('GET', KEYS[1])
        """

    var epochKey: String { "\(namespace):epoch" }

    /// The shared level's epoch, created if it has none.
    func currentEpoch() async throws -> String {
        let reply = try await client.send(
            .eval(Self.epochScript, keys: [epochKey], arguments: [RedisArgument(UUID().uuidString)])
        )
        guard let epoch = reply.string else {
            throw RedisError(code: .protocolViolation, message: "the epoch script returned \(reply), not a string")
        }
        return epoch
    }

    /// What a channel that came back after a gap means for local copies, and the epoch to
    /// remember from now on. An epoch that cannot be read, or was never known, counts as kept:
    /// confirming copies is the safe choice.
    func invalidationAfterGap(knownEpoch: String?) async -> (SharedCacheInvalidation, epoch: String?) {
        guard let current = await epochAfterGap() else { return (.all, knownEpoch) }
        guard let knownEpoch, knownEpoch != current else { return (.all, current) }
        return (.emptied, current)
    }

    /// The epoch, asked until the command connections answer too, for at most 10 s: they
    /// reconnect on their own backoff, often a moment after the subscription has. Invalidation
    /// messages wait in the subscription's buffer meanwhile.
    private func epochAfterGap() async -> String? {
        let deadline = probeClock.now + .seconds(10)
        var pause = Duration.milliseconds(20)
        while true {
            if let epoch = try? await currentEpoch() { return epoch }
            guard probeClock.now + pause < deadline, !Task.isCancelled else { return nil }
            try? await probeClock.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(500))
        }
    }
}
