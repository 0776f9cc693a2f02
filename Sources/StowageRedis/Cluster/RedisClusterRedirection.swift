/// A `MOVED` or `ASK` error reply: the slot lives (for good, or for this one command during a
/// migration) on another node.
///
/// Same reading as valkey-swift's `ValkeyClusterRedirectionError` and redis-py's `AskError`:
/// `MOVED <slot> <host>:<port>` / `ASK <slot> <host>:<port>`; an empty host means "the host you
/// asked". Split at the last colon so IPv6 addresses keep theirs.
struct RedisClusterRedirection: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        /// The slot moved: update the map, retry there.
        case moved
        /// The slot is migrating and this key is already on the target: send `ASKING` then the
        /// command there, once, without changing the map.
        case ask
    }

    var kind: Kind
    var slot: Int
    var host: String
    var port: Int

    init?(_ message: String, askedHost: String) {
        let parts = message.split(separator: " ")
        guard parts.count == 3, let slot = Int(parts[1]), let colon = parts[2].lastIndex(of: ":"),
            let port = Int(parts[2][parts[2].index(after: colon)...])
        else { return nil }
        switch parts[0] {
        case "MOVED": kind = .moved
        case "ASK": kind = .ask
        default: return nil
        }
        self.slot = slot
        let host = String(parts[2][..<colon])
        self.host = host.isEmpty ? askedHost : host
        self.port = port
    }
}
