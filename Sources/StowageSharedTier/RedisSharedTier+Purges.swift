import Foundation
import Logging
import StowageCache
import StowageRedis
import Synchronization

// Purges (removals and bans) must reach every node whatever Redis holds. A removal travels as a
// `DEL`, and the server's tracking only reports keys a command modified: a `DEL` of a value Redis
// no longer holds (after `FLUSHALL`, a restart, an expiry) tells no one, while other nodes may
// still serve their local copies (kept unconfirmed after `.emptied`). So besides the `DEL`:
//
// - the key is published on `NS:invalidations` whenever the server did not track the write,
//   including a tracked `DEL` that removed nothing;
// - every purge is appended to the stream `NS:purges` (`XADD … MAXLEN ~ 10000`), which a node
//   reads after a gap in its invalidation channel: messages sent while it was not listening are
//   lost, entries of the stream are not (a purge replayed after Redis restarted empty lands in
//   the new, empty stream, which nodes that learn of the restart read from its start);
// - a purge that cannot be sent throws, and the caches above keep it in their one outage
//   queue (`PendingSharedWrites`, with the writes) until Redis answers again.

/// One entry of the purge stream `NS:purges`.
enum PurgeLogEntry: Hashable, Sendable {
    /// A removed key.
    case key(String)
    /// A ban of every key under the prefix.
    case prefix(String)
}

extension RedisSharedTier {
    /// `NS:purges`: the stream of purges, for nodes that were not listening when they were sent.
    var purgeLogKey: String { "\(namespace):purges" }

    /// Most entries the purge stream keeps (approximately: `MAXLEN ~`).
    static let purgeLogLength = 10_000

    /// Appends `purge` to `NS:purges`, as this node's.
    func logPurge(_ purge: PurgeLogEntry) async throws {
        let kind: String
        let value: String
        switch purge {
        case .key(let key): (kind, value) = ("k", key)
        case .prefix(let prefix): (kind, value) = ("p", prefix)
        }
        try await client.send(
            RedisCommand(
                "XADD",
                [
                    RedisArgument(purgeLogKey), "MAXLEN", "~", RedisArgument(Self.purgeLogLength), "*", "n",
                    RedisArgument(nodeID), RedisArgument(kind), RedisArgument(value),
                ],
                keyIndex: 1
            )
        )
    }

    /// The id of the newest entry of `NS:purges`, or `nil` when it is empty.
    func latestPurgeID() async throws -> String? {
        let reply = try await client.send(
            RedisCommand("XREVRANGE", RedisArgument(purgeLogKey), "+", "-", "COUNT", "1", keyIndex: 1)
        )
        return reply.elements?.first?.elements?.first?.string
    }

    /// Other nodes' purges logged after the entry `id` (all of them when `id` is `nil`), and the
    /// id of the newest entry read. The start is inclusive (an exclusive `(id` needs Redis 6.2),
    /// so the entry `id` itself is skipped.
    func purges(after id: String?) async throws -> (purges: [PurgeLogEntry], newest: String?) {
        let reply = try await client.send(
            RedisCommand("XRANGE", RedisArgument(purgeLogKey), RedisArgument(id ?? "-"), "+", keyIndex: 1)
        )
        var purges: [PurgeLogEntry] = []
        var newest = id
        for entry in reply.elements ?? [] {
            guard let parts = entry.elements, parts.count == 2, let entryID = parts[0].string else { continue }
            newest = entryID
            if entryID == id { continue }
            let fields = (parts[1].elements ?? []).map { $0.string ?? "" }
            var sender: String?
            var purge: PurgeLogEntry?
            for index in stride(from: 0, to: fields.count - 1, by: 2) {
                switch fields[index] {
                case "n": sender = fields[index + 1]
                case "k": purge = .key(fields[index + 1])
                case "p": purge = .prefix(fields[index + 1])
                default: break
                }
            }
            if let purge, sender != nodeID { purges.append(purge) }
        }
        return (purges, newest)
    }
}
