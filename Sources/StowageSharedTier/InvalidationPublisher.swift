import Logging
import NIOCore
import StowageRedis
import Synchronization

/// Publishes this node's invalidations, coalescing the keys written while a `PUBLISH` is in
/// flight into the next one — where the server does not track writes for the tier (RESP2, Redis
/// < 6, a cluster, ``RedisSharedTier/InvalidationTransport/publish``), and for writes made while
/// the tracking connection is being re-established.
///
/// A write returns once its `SET`/`DEL` is acknowledged; the invalidation follows in the
/// background, always after the write (so another node that re-reads on the message sees the
/// new value). One caller costs one `PUBLISH` per write, as before; under concurrent writes the
/// server handles one `PUBLISH` for many keys instead of one each, which is what keeps shared
/// writes near the speed of plain `SET`s (`STOWAGE_BENCH_INVALIDATIONS=publish` in the bench's
/// `shared-tier.set-1KiB`).
///
/// Message: the node id, a newline, then each key as `<UTF-8 byte count>:<key>`, so keys may
/// hold any character.
final class InvalidationPublisher: Sendable {
    private struct State {
        var keys: [String] = []
        var isFlushing = false
    }

    private let state = Mutex(State())
    private let client: any RedisCommandExecuting
    private let channel: String
    private let nodeID: String
    private let logger: Logger

    init(client: any RedisCommandExecuting, channel: String, nodeID: String, logger: Logger) {
        self.client = client
        self.channel = channel
        self.nodeID = nodeID
        self.logger = logger
    }

    /// Queues `key`; starts a flush unless one is running (it will pick the key up).
    func publish(_ key: String) {
        let startsFlush = state.withLock { state in
            state.keys.append(key)
            if state.isFlushing { return false }
            state.isFlushing = true
            return true
        }
        if startsFlush { Task { await flush() } }
    }

    private func flush() async {
        while true {
            let keys: [String] = state.withLock { state in
                if state.keys.isEmpty { state.isFlushing = false }
                // At most `maximumKeysPerMessage` a message: a receiver takes a larger one for
                // a gap (`.all`), as it does a flood from a hostile client of the server.
                let batch = Array(state.keys.prefix(Self.maximumKeysPerMessage))
                state.keys.removeFirst(batch.count)
                return batch
            }
            if keys.isEmpty { return }
            do {
                try await client.send(
                    .publish(channel, message: RedisArgument(Self.encode(nodeID: nodeID, keys: keys)))
                )
            } catch {
                logger.warning(
                    "could not publish invalidations; other nodes keep their copies until they expire",
                    metadata: ["keys": "\(keys.count)", "error": "\(error)"]
                )
            }
        }
    }

    /// The most keys one message carries.
    static let maximumKeysPerMessage = 1_000
    /// The largest message a receiver decodes: 1,000 keys of up to 1 KiB each, and room to spare.
    static let maximumMessageBytes = 1 << 20

    static func encode(nodeID: String, keys: [String]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeString(nodeID)
        buffer.writeString("\n")
        for key in keys {
            buffer.writeString(String(key.utf8.count))
            buffer.writeString(":")
            buffer.writeString(key)
        }
        return buffer
    }

    /// What a received message says.
    enum Decoded {
        /// The sender and the keys it changed.
        case keys(nodeID: String, keys: [String])
        /// Too large to read key by key (more bytes than ``maximumMessageBytes`` or more keys than
        /// four messages of ``maximumKeysPerMessage``): no node sends one.
        case oversized
        /// Not a message of this format.
        case malformed
    }

    /// What `message` says, read once: a message over ``maximumMessageBytes``, or one that
    /// reaches more keys than four messages of ``maximumKeysPerMessage``, stops being read.
    static func decode(_ message: ByteBuffer) -> Decoded {
        guard message.readableBytes <= maximumMessageBytes else { return .oversized }
        let maximumKeys = 4 * maximumKeysPerMessage
        var buffer = message
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")),
            let nodeID = buffer.readString(length: newline - buffer.readerIndex)
        else { return .malformed }
        buffer.moveReaderIndex(forwardBy: 1)
        var keys: [String] = []
        while buffer.readableBytes > 0 {
            guard let colon = buffer.readableBytesView.firstIndex(of: UInt8(ascii: ":")),
                let lengthText = buffer.readString(length: colon - buffer.readerIndex), let length = Int(lengthText),
                length >= 0
            else { return .malformed }
            buffer.moveReaderIndex(forwardBy: 1)
            guard let key = buffer.readString(length: length) else { return .malformed }
            guard keys.count < maximumKeys else { return .oversized }
            keys.append(key)
        }
        return .keys(nodeID: nodeID, keys: keys)
    }
}
