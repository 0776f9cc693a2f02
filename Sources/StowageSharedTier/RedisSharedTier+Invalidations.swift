import Foundation
import Logging
import NIOCore
import StowageCache
import StowageRedis
import Synchronization

/// What the invalidation pump hears: the `NS:invalidations` subscription, or the tracker.
enum InvalidationSignal: Sendable {
    case subscription(RedisSubscription.Event)
    case tracker(InvalidationTracker.Event)
}

// One pump for both sources, so that a gap is one gap: while either source is down,
// invalidations may be missed, and only when both are back is the epoch asked, once. (Two
// separate answers could disagree after a restart: the first node to ask stores a new epoch, and
// the second asker of the same node would then see it unchanged and conclude `.all` — confirming
// local copies against an empty server, which drops them all.)
extension RedisSharedTier {
    private enum Source: Hashable { case subscription, tracker }

    private struct PumpState {
        /// Sources not (or no longer) delivering.
        var down: Set<Source>
        var hadGap = false
        var knownEpoch: String?
        /// The newest entry of `NS:purges` this node has read (see `RedisSharedTier+Purges`).
        var lastPurgeID: String?
        var hasLoggedTransport = false
    }

    func startPump(
        subscription: RedisSubscription,
        signal: AsyncStream<InvalidationSignal>.Continuation,
        transport: InvalidationTransport
    ) {
        let events = subscription.events
        let forward = Task {
            for await event in events { signal.yield(.subscription(event)) }
        }
        let signals = signals
        let hasTracker = tracker != nil
        let reasonForPublishing: String? =
            if hasTracker { nil } else if transport == .publish { "the tier was configured to publish" } else {
                "server-assisted tracking is per server and this client is \(type(of: client))"
            }
        let task = Task { [weak self] in
            var state = PumpState(down: hasTracker ? [.subscription, .tracker] : [.subscription])
            if let reasonForPublishing, let self {
                logPublishing(reason: reasonForPublishing)
                state.hasLoggedTransport = true
            }
            for await signal in signals {
                guard let self else { return }
                await handle(signal, state: &state)
            }
        }
        pump.withLock { $0 = [forward, task] }
    }

    private func handle(_ signal: InvalidationSignal, state: inout PumpState) async {
        switch signal {
        case .subscription(.subscribed):
            state.down.remove(.subscription)
            await settle(&state)
        case .subscription(.disconnected):
            markGap(.subscription, state: &state)
        case .subscription(.message(let name, let payload)):
            let sender: String
            let keys: [String]
            switch InvalidationPublisher.decode(payload) {
            case .keys(let nodeID, let decodedKeys):
                (sender, keys) = (nodeID, decodedKeys)
            case .oversized:
                // Larger than any node sends (anyone who may PUBLISH on the server can send
                // one): reading it key by key held other invalidations up for seconds. It
                // stands for "something changed", which `.all` answers safely.
                logger.warning(
                    "an invalidation message too large to read key by key; treating it as a change to everything",
                    metadata: ["channel": "\(name)", "bytes": "\(payload.readableBytes)"]
                )
                broadcast(.all)
                return
            case .malformed:
                logger.warning("ignoring a malformed invalidation message", metadata: ["channel": "\(name)"])
                return
            }
            if sender == nodeID { return }
            for key in keys {
                if name == banChannel {
                    broadcast(.prefix(key))
                } else {
                    broadcast(.key(key))
                }
            }
        case .tracker(.tracking):
            if !state.hasLoggedTransport {
                state.hasLoggedTransport = true
                logger.notice(
                    """
                    invalidations: the server tracks writes under '\(namespace):{=' \
                    (CLIENT TRACKING BCAST NOLOOP); writes carry no PUBLISH
                    """
                )
            }
            state.down.remove(.tracker)
            await settle(&state)
        case .tracker(.unavailable(let reason)):
            echoes.removeAll()
            if !state.hasLoggedTransport {
                state.hasLoggedTransport = true
                logPublishing(reason: reason)
            } else {
                logger.notice("invalidations: tracking no longer available; publishing from now on: \(reason)")
            }
            state.down.remove(.tracker)
            await settle(&state)
        case .tracker(.disconnected):
            echoes.removeAll()
            markGap(.tracker, state: &state)
        case .tracker(.keys(let keys)):
            for key in keys where await !isEchoOfOwnWrite(key) {
                broadcast(.key(key))
            }
        case .tracker(.flushed):
            // The epoch went with the values; a later gap must compare against the new one.
            logger.notice("the shared level was flushed (FLUSHALL/FLUSHDB); keeping local copies")
            broadcast(.emptied)
            if let epoch = try? await currentEpoch() { state.knownEpoch = epoch }
        }
    }

    /// Whether Redis still holds what this node's own write left for `key` (see
    /// ``OwnWriteEchoes``); `false` when no write of `key` is expected or Redis cannot say.
    private func isEchoOfOwnWrite(_ key: String) async -> Bool {
        guard let expected = echoes.take(forKey: key) else { return false }
        guard let reply = try? await client.send(.get(valueKey(key))) else { return false }
        return reply.bytes == expected
    }

    private func logPublishing(reason: String) {
        logger.notice("invalidations: publishing on '\(channel)' after each write (\(reason))")
    }

    private func markGap(_ source: Source, state: inout PumpState) {
        state.down.insert(source)
        if !state.hadGap { broadcast(.interrupted) }
        state.hadGap = true
        ready.store(false, ordering: .releasing)
    }

    /// Once every source delivers again: after a gap, tells the listeners what it means.
    private func settle(_ state: inout PumpState) async {
        guard state.down.isEmpty else { return }
        if state.hadGap {
            let (invalidation, epoch) = await invalidationAfterGap(knownEpoch: state.knownEpoch)
            state.knownEpoch = epoch
            if invalidation == .emptied {
                logger.notice("the shared level lost its values (restarted empty or flushed); keeping local copies")
            } else {
                logger.notice("invalidations flow again; dropping memory copies, confirming disk copies")
            }
            broadcast(invalidation)
            // Purges sent while this node was not listening: all of the stream when Redis lost its
            // values (the stream went with them and holds only purges made since).
            if let caughtUp = try? await purges(after: invalidation == .emptied ? nil : state.lastPurgeID) {
                for purge in caughtUp.purges {
                    switch purge {
                    case .key(let key): broadcast(.key(key))
                    case .prefix(let prefix): broadcast(.prefix(prefix))
                    }
                }
                state.lastPurgeID = caughtUp.newest
                // Redis answers: calls need not wait for the next probe (the caches above send
                // what they kept during the outage when they hear `.all` or `.emptied`).
                breaker.close()
            }
            state.hadGap = false
        } else if state.knownEpoch == nil {
            state.knownEpoch = try? await currentEpoch()
            state.lastPurgeID = try? await latestPurgeID()
        }
        ready.store(true, ordering: .releasing)
        readiness.fire()
    }

    func broadcast(_ invalidation: SharedCacheInvalidation) {
        let continuations = listeners.withLock { Array($0.values) }
        for continuation in continuations {
            if case .dropped = continuation.yield(invalidation) {
                // A listener 100,000 behind (a cache not run yet) lost the oldest: it cannot
                // know which keys, so it drops everything once it has caught up to here.
                continuation.yield(.all)
            }
        }
    }
}
