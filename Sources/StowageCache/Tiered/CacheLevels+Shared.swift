import Foundation
import Logging
import ServiceLifecycle
import StowageCore
import Synchronization
import Tracing

// The shared level behind memory and disk (`SharedLevel`): reads that fill the local levels,
// writes and removals that are kept for a replay while it is down, the confirmation of disk
// copies that may have missed an invalidation, and other nodes' invalidations. Failures of the
// shared level never reach a caller: they are logged once per outage and counted, and the
// levels go on with memory and disk (FusionCache's fail-safe and auto-recovery).

extension CacheLevels {
    /// Reads `key` from the shared level and, on a hit, hands the entry to `fill`, which keeps
    /// it locally (through ``write(_:forKey:cost:timeToLive:keepsInMemory:fillBegunAt:toDisk:)``) and
    /// returns what the caller reads, or `nil` when the bytes are of no use to this node
    /// (another node's newer format): that reads as `.absent`.
    ///
    /// An invalidation that arrives while the fill is under way may have removed the local
    /// copies before the fill wrote them; they are then dropped again, so a stale copy never
    /// outlives an invalidation (what was read is still returned: it was current when read).
    /// So are they when a removal of this node's was under way as the fill began
    /// (``removingEverywhere(_:)``): it may have removed the local copies and not yet the shared one.
    /// A write of this node's that overtook the fill (``writingEverywhere(_:_:)``) keeps the fill
    /// from writing at all: `fill` hands its stamp to the local write, which checks it under the
    /// key's lock, so the older value never lands over the write's copies.
    /// A key changed here while the shared level was down, or under a prefix banned here then,
    /// reads as `.absent`: the shared level holds an older state of it (or what the ban
    /// removed) until the replay.
    package func readShared<Found: Sendable>(
        _ key: String,
        fill: (SharedCacheEntry, SharedWriteStripes.Stamp) async -> Found?
    ) async -> SharedLookup<Found> {
        // Stamped before the look at the outage queue: a write of this node's that runs whole
        // between the two, its shared half kept for the replay, then marks this fill overtaken.
        let begun = sharedWrites.stamp(key)
        guard let shared = sharedLevel, shared.pendingWrites.change(forKey: key) == nil else { return .absent }
        let removalsBefore = removalCount
        let ownRemovalsBefore = removalsBegun.load(ordering: .sequentiallyConsistent)
        let ownRemovalUnderWay = removalsUnderWay.load(ordering: .sequentiallyConsistent) > 0
        let entry: SharedCacheEntry
        switch await sharedEntry(key, from: shared) {
        case .none: return .unreachable
        case .some(.none):
            shared.counters.recordMiss()
            return .absent
        case .some(.some(let found)): entry = found
        }
        shared.counters.recordHit(bytes: entry.data.count)
        guard let found = await fill(entry, begun) else { return .absent }
        // A fill that kept nothing has nothing to drop: a copy here is a later write's, and for a
        // memory-only write (a removal too, which moves the counts below) the only one.
        if begun.keptNothing { return .found(found) }
        if ownRemovalUnderWay || removalsBegun.load(ordering: .sequentiallyConsistent) != ownRemovalsBefore {
            // This node's own removal: the disk copy goes too, whatever other nodes' invalidations do.
            await drop(key, reason: "a shared fill a removal of this node's overtook")
        } else if removalCount != removalsBefore {
            await drop(key, includingDisk: shared.invalidatesDisk, reason: "a shared fill an invalidation overtook")
        }
        return .found(found)
    }

    /// One read of `key` from the shared level, in a ``CacheTracing/SpanName/sharedRead`` span
    /// (marked as an error when the level did not answer); `nil` when it did not answer.
    private func sharedEntry(_ key: String, from shared: SharedLevel) async -> SharedCacheEntry?? {
        await activeTracer.withSpanIfTracing(CacheTracing.SpanName.sharedRead, ofKind: .client) { span in
            span.recordCacheKey(key, cacheName: disk?.configuration.name)
            let answer = await shared.health.call("get") { try await shared.tier.entry(forKey: key) }
            if span.isRecording {
                switch answer {
                case .none: span.setStatus(SpanStatus(code: .error, message: "the shared level did not answer"))
                case .some(let entry):
                    span.attributes[CacheTracing.Attribute.hit] = entry != nil
                    if let entry { span.attributes[CacheTracing.Attribute.bytes] = entry.data.count }
                }
            }
            return answer
        }
    }

    /// Confirms a disk copy of `key` stored at `modified` against the shared level, when it was
    /// stored before the ``InvalidationHorizon`` (it may have missed an invalidation) and nothing
    /// of `key` waits for a replay: the shared value replaces it through `fill` (as in
    /// ``readShared(_:fill:)``), or, when the shared level has none, the copy is dropped.
    ///
    /// - Returns: `nil` when the copy needs no confirmation (serve it); `.unreachable` when the
    ///   shared level did not answer (serve it unchecked, as in any outage).
    package func confirmDiskCopy<Found: Sendable>(
        _ key: String,
        storedAt modified: Date,
        fill: (SharedCacheEntry, SharedWriteStripes.Stamp) async -> Found?
    ) async -> SharedLookup<Found>? {
        // Taken before the read (and before the look at the outage queue): a write of this
        // node's that overtakes it replaces the copy, and the drop below must not take the
        // write's copies (``SharedWriteStripes``). Kept when a write of another key of the stripe
        // overtook it: it is confirmed again when next read.
        let begun = sharedWrites.stamp(key)
        guard let shared = sharedLevel, shared.confirmsDiskCopies,
            shared.horizon.requiresConfirmation(ofCopyStoredAt: modified),
            shared.pendingWrites.change(forKey: key) == nil
        else { return nil }
        let lookup = await readShared(key, fill: fill)
        if case .absent = lookup {
            await drop(key, unlessOvertaken: begun, reason: "a disk copy the shared level no longer has")
        }
        return lookup
    }

    /// Stores `data` for `key` in the shared level (the other nodes drop their copies); kept for
    /// the replay when the shared level does not take it.
    package func writeShared(_ data: Data, forKey key: String, timeToLive: Duration?) async {
        guard let shared = sharedLevel else { return }
        let taken: Void? = await activeTracer.withSpanIfTracing(CacheTracing.SpanName.sharedWrite, ofKind: .client) {
            span in
            span.recordCacheKey(key, cacheName: disk?.configuration.name)
            if span.isRecording { span.attributes[CacheTracing.Attribute.bytes] = data.count }
            let taken: Void? = await shared.health.call("set") {
                try await shared.tier.setData(data, forKey: key, timeToLive: timeToLive)
            }
            if taken == nil { span.setStatus(SpanStatus(code: .error, message: "the shared level did not answer")) }
            return taken
        }
        keepOrSettle(.set, forKey: key, taken: taken != nil, in: shared)
    }

    /// Stores a loaded value and releases `lock` (``SharedCacheTier/setData(_:forKey:timeToLive:releasing:)``);
    /// kept for the replay when the shared level does not answer.
    ///
    /// - Returns: Whether the value was stored; `nil` when the shared level did not answer.
    package func writeShared(
        _ data: Data,
        forKey key: String,
        timeToLive: Duration?,
        releasing lock: SharedCacheLoadLock
    ) async -> Bool? {
        guard let shared = sharedLevel else { return nil }
        let stored = await shared.health.call("set") {
            try await shared.tier.setData(data, forKey: key, timeToLive: timeToLive, releasing: lock)
        }
        if stored == nil { keepOrSettle(.set, forKey: key, taken: false, in: shared) }
        return stored
    }

    /// Removes `key` from the shared level (the other nodes drop their copies); kept for the
    /// replay when the shared level does not take it.
    package func removeShared(_ key: String) async {
        guard let shared = sharedLevel else { return }
        let taken: Void? = await shared.health.call("remove") { try await shared.tier.removeData(forKey: key) }
        keepOrSettle(.remove, forKey: key, taken: taken != nil, in: shared)
    }

    /// Tells the other nodes to drop their copies of the keys under `prefix` (a ban,
    /// ``SharedCacheTier/invalidate(keysWithPrefix:)``); kept for the replay when the shared
    /// level does not take it, like a removal, so a ban made during an outage still reaches
    /// every node. A level that cannot send bans (`.unsupported`) is logged, not kept: trying
    /// again would not help.
    package func banShared(_ prefix: String) async {
        guard let shared = sharedLevel else { return }
        do {
            try await shared.tier.invalidate(keysWithPrefix: prefix)
            shared.health.recordSuccess()
            shared.pendingWrites.settle(prefix, isPrefix: true)
        } catch let error as StowageError where error.code == .unsupported {
            logger.warning(
                "the shared level cannot send bans; other nodes keep their copies until they expire",
                metadata: ["cache": "\(shared.name)", "prefix": "\(prefix)", "error": "\(error)"]
            )
        } catch {
            shared.health.recordFailure(error, operation: "ban")
            keepOrSettle(.ban, forKey: prefix, taken: false, in: shared)
        }
    }

    /// ``SharedLevel/settleOrKeep(_:forKey:taken:)``, and a replay scheduled for a change kept:
    /// it is tried again (100 ms, doubling up to 5 s) until the level takes it, so a purge made
    /// during an outage leaves even a node that makes no further call to the level.
    private func keepOrSettle(
        _ change: PendingSharedWrites.Change,
        forKey key: String,
        taken: Bool,
        in shared: SharedLevel
    ) {
        if shared.settleOrKeep(change, forKey: key, taken: taken) { scheduleReplayRetry(shared) }
    }

    /// Drops the local copies another node made stale.
    ///
    /// - Parameters:
    ///   - invalidation: What the other node changed.
    ///   - ban: Applies a ``SharedCacheInvalidation/prefix(_:)`` (a cache whose keys carry more
    ///     than the prefix says, such as the HTTP cache's tags); `nil` drops the keys under it.
    package func apply(_ invalidation: SharedCacheInvalidation, banning ban: ((String) async -> Void)? = nil) async {
        let invalidatesDisk = sharedLevel?.invalidatesDisk ?? true
        switch invalidation {
        case .key(let key):
            // Another write reached the shared level after this node's change of `key` failed
            // to: replaying that change would overwrite the newer value, or delete it when the
            // local copy it would send is dropped just below.
            sharedLevel?.pendingWrites.settle(key)
            await drop(key, includingDisk: invalidatesDisk, reason: "an invalidated disk copy")
        case .prefix(let prefix):
            // Another node's ban of the same prefix reached every node after this one's failed
            // to: it covers everything this node's would.
            sharedLevel?.pendingWrites.settle(prefix, isPrefix: true)
            if let ban {
                await ban(prefix)
            } else {
                await drop(keysWithPrefix: prefix, includingDisk: invalidatesDisk, reason: "banned disk copies")
            }
        case .all, .emptied:
            // Horizon first: a read that misses memory after the purge then confirms its disk
            // copy (after `.all`), or trusts it (after `.emptied`).
            sharedLevel?.horizon.apply(invalidation)
            dropMemory()
            await replaySharedWrites()
        case .interrupted:
            // A gap beginning removes nothing: only confirmation is suspended.
            sharedLevel?.horizon.apply(invalidation)
        }
    }

    /// Applies other nodes' invalidations (``apply(_:banning:)``), in order, until the task is
    /// cancelled, its service group shuts down gracefully, or the shared level shuts down (nothing
    /// more can arrive); without a shared level, waits for the first two (a service with nothing
    /// to do).
    ///
    /// The first run applies what was sent since the levels were made (the tier buffered it). A
    /// later run subscribes afresh, and since what was sent while none listened is unknown, it
    /// begins with ``SharedCacheInvalidation/all``: memory is dropped and older disk copies are
    /// confirmed before use.
    ///
    /// `heard`, when given, sees each invalidation before it is applied: a cache that orders
    /// its own fetches with invalidations (the HTTP cache's) counts it there first.
    package func run(
        banning ban: ((String) async -> Void)? = nil,
        heard: ((SharedCacheInvalidation) async -> Void)? = nil
    ) async {
        guard let shared = sharedLevel else {
            try? await gracefulShutdown()
            return
        }
        let (invalidations, isFirst) = shared.subscribe()
        if !isFirst {
            await heard?(.all)
            await apply(.all, banning: ban)
        }
        for await invalidation in invalidations.cancelOnGracefulShutdown() {
            await heard?(invalidation)
            await apply(invalidation, banning: ban)
        }
    }

    /// Sends the changes the shared level missed, oldest first, and stops at the first it does
    /// not take (it is down again; the rest wait for the next recovery). A ban is sent again as
    /// it was made. A write sends what the
    /// disk level holds for the key now, with its remaining time-to-live; a key no longer on
    /// disk (evicted, expired) is removed from the shared level instead, since its value there
    /// is older than the one this node wrote.
    ///
    /// Runs when a call to the shared level first succeeds after an outage, and when the
    /// invalidation channel comes back (``SharedCacheInvalidation/all``, `.emptied`).
    package func replaySharedWrites() async {
        guard let shared = sharedLevel else { return }
        // Checked again once a replay no longer counts as under way: a change kept after its last
        // pass found nothing waiting, but before it stopped, was left by every replay asked for
        // meanwhile (the recovery after the change's outage, its retry firing): they returned at
        // once, and with the level up nothing else would send it (the double-checked hand-off).
        while !shared.pendingWrites.isEmpty {
            guard !shared.replaying.exchange(true, ordering: .acquiring) else {
                shared.replaysFoundUnderWay.add(1, ordering: .relaxed)
                return
            }
            let refused = await replayPasses(to: shared)
            shared.replaying.store(false, ordering: .releasing)
            // Scheduled only once this replay no longer counts as under way: a retry that found
            // it still running would return at once, and nothing would try again.
            if refused {
                scheduleReplayRetry(shared)
                return
            }
        }
    }

    /// The passes of ``replaySharedWrites()``; returns whether the shared level refused a change.
    private func replayPasses(to shared: SharedLevel) async -> Bool {
        var sent = 0
        // Pass after pass: a change the shared level missed while a pass ran (it failed and came
        // back, and the replay its recovery asked for found this one under way) waits for the next.
        while case let waiting = shared.pendingWrites.snapshot(), !waiting.isEmpty {
            for pending in waiting {
                // Under the key's lock, and only while the change still waits: a change another
                // node made since the snapshot (heard as `.key`, which settles it) or a write here
                // that reached the shared level must not be overwritten by this older state, and a
                // local write must not land between reading the disk copy and sending it.
                let outcome = await keyLocks.withLock(pending.key) { () async -> Bool? in
                    guard shared.pendingWrites.isWaiting(pending) else { return false }
                    guard await replay(pending, to: shared) else { return nil }
                    shared.pendingWrites.sent(pending)
                    return true
                }
                guard let outcome else { return true }
                if outcome { sent += 1 }
            }
        }
        shared.replayRetryMilliseconds.store(100, ordering: .relaxed)
        shared.overflowLogged.store(false, ordering: .relaxed)
        logger.notice(
            "sent the changes made while the shared level was down",
            metadata: ["cache": "\(shared.name)", "changes": "\(sent)"]
        )
        return false
    }

    /// Tries a refused replay again after a pause (100 ms, doubling up to 5 s), until every
    /// change is sent. A replay can start while the shared level's calls still fail, as when its
    /// invalidation channel is back (`.all`) before its client's circuit breaker has closed; no
    /// call then succeeds to mark the recovery, and without this the changes would wait for the
    /// end of the next outage.
    private func scheduleReplayRetry(_ shared: SharedLevel) {
        guard !shared.replayRetryScheduled.exchange(true, ordering: .acquiring) else { return }
        let milliseconds = shared.replayRetryMilliseconds.load(ordering: .relaxed)
        shared.replayRetryMilliseconds.store(min(milliseconds * 2, 5_000), ordering: .relaxed)
        Task { [weak self] in
            try? await shared.waitClock.sleep(for: .milliseconds(milliseconds))
            shared.replayRetryScheduled.store(false, ordering: .releasing)
            await self?.replaySharedWrites()
        }
    }

    /// Sends one change the shared level missed; returns whether it took it.
    private func replay(_ pending: PendingSharedWrites.Pending, to shared: SharedLevel) async -> Bool {
        if pending.change == .ban {
            do {
                try await shared.tier.invalidate(keysWithPrefix: pending.key)
                shared.health.recordSuccess()
            } catch let error as StowageError where error.code == .unsupported {
                // As in `banShared`: the level answered that it cannot send bans, so trying
                // again would not help (it would be retried every 5 s, the level reported down).
                logger.warning(
                    "the shared level cannot send bans; other nodes keep their copies until they expire",
                    metadata: ["cache": "\(shared.name)", "prefix": "\(pending.key)", "error": "\(error)"]
                )
            } catch {
                shared.health.recordFailure(error, operation: "replay-ban")
                return false
            }
            return true
        }
        var current: (data: Data, timeToLive: Duration?)?
        if pending.change == .set {
            do {
                current = try await diskCopy(forKey: pending.key, clock: shared.clock)
            } catch {
                logger.warning(
                    "could not read a change to send to the shared level",
                    metadata: ["key": "\(pending.key)", "error": "\(error)"]
                )
            }
            if let copy = current, let sharedCopy = shared.sharedCopy {
                current = sharedCopy(pending.key, copy.data, copy.timeToLive)
            }
        }
        let taken: Void?
        if let current {
            taken = await shared.health.call("replay-set") {
                try await shared.tier.setData(current.data, forKey: pending.key, timeToLive: current.timeToLive)
            }
        } else {
            taken = await shared.health.call("replay-remove") {
                try await shared.tier.removeData(forKey: pending.key)
            }
        }
        return taken != nil
    }

    /// The bytes on disk for `key` and the time they have left, or `nil` when none.
    private func diskCopy(forKey key: String, clock: CacheClock) async throws -> (data: Data, timeToLive: Duration?)? {
        guard let disk, let info = try await disk.info(forKey: key), let data = try await disk.data(forKey: key) else {
            return nil
        }
        guard let expires = info.expires else { return (data, nil) }
        let remaining = expires.timeIntervalSince(clock.now())
        return remaining > 0 ? (data, .timeInterval(remaining)) : nil
    }
}
