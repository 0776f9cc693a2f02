import Foundation
import Logging
import StowageCore
import Synchronization

// Changes made while the shared level was down, and their replay when it answers again (see
// `PendingSharedWrites`). A replay runs when a call to the shared level first succeeds after an
// outage, and when the invalidation channel comes back.

extension HybridCache {
    /// Keys whose latest write or removal the shared level has not taken yet (it was down);
    /// they are sent when it answers again.
    public var pendingSharedWrites: Int { pendingWrites.waitingCount }

    /// After a write or removal of `key` through the shared level: forget an older pending
    /// change when the shared level took it, or keep it for the replay when it did not.
    func settleOrKeep(_ change: PendingSharedWrites.Change, forKey key: String, taken: Bool) {
        if taken {
            pendingWrites.settle(key)
        } else if !pendingWrites.record(change, forKey: key),
            !pendingOverflowLogged.exchange(true, ordering: .relaxed)
        {
            disk.configuration.logger.warning(
                "too many changes waiting for the shared level; further ones stay local until they expire",
                metadata: ["cache": "\(disk.configuration.name)", "limit": "\(pendingWrites.limit)"]
            )
        }
    }

    /// Sends the waiting changes, oldest first, and stops at the first the shared level does not
    /// take (it is down again; the rest wait for the next recovery). A write sends what the disk
    /// tier holds for the key now, with its remaining time-to-live; a key no longer on disk
    /// (evicted, expired) is removed from the shared level instead, since its value there is
    /// older than the one this node wrote.
    func replayPendingWrites() async {
        guard let shared, !pendingWrites.isEmpty, !replaying.exchange(true, ordering: .acquiring) else { return }
        defer { replaying.store(false, ordering: .releasing) }
        var sent = 0
        for pending in pendingWrites.snapshot() {
            var current: (data: Data, timeToLive: Duration?)?
            if pending.change == .set {
                do {
                    current = try await localCopy(forKey: pending.key)
                } catch {
                    disk.configuration.logger.warning(
                        "could not read a change to send to the shared level",
                        metadata: ["key": "\(pending.key)", "error": "\(error)"]
                    )
                }
            }
            let taken: Void?
            if let current {
                taken = await health.call("replay-set") {
                    try await shared.setData(current.data, forKey: pending.key, timeToLive: current.timeToLive)
                }
            } else {
                taken = await health.call("replay-remove") { try await shared.removeData(forKey: pending.key) }
            }
            guard taken != nil else { return }
            pendingWrites.sent(pending)
            sent += 1
        }
        pendingOverflowLogged.store(false, ordering: .relaxed)
        disk.configuration.logger.notice(
            "sent the changes made while the shared level was down",
            metadata: ["cache": "\(disk.configuration.name)", "changes": "\(sent)"]
        )
    }

    /// The bytes on disk for `key` and the seconds they have left, or `nil` when none.
    private func localCopy(forKey key: String) async throws -> (data: Data, timeToLive: Duration?)? {
        guard let info = try await disk.info(forKey: key), let data = try await disk.data(forKey: key) else {
            return nil
        }
        guard let expires = info.expires else { return (data, nil) }
        let remaining = expires.timeIntervalSince(disk.configuration.clock.now())
        return remaining > 0 ? (data, .timeInterval(remaining)) : nil
    }
}
