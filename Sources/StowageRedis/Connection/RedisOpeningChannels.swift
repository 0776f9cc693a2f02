import NIOCore
import Synchronization

/// The channels of connections a pool is still opening (connected, handshake not finished), so
/// that ``RedisConnectionPool/shutdown()`` can close them: a server that accepts but never
/// answers would otherwise keep their callers waiting for the connect timeout after shutdown.
final class RedisOpeningChannels: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Records `channel`; false once ``closeAll()`` ran (the caller then closes it itself).
    func add(_ channel: any Channel) -> Bool {
        state.withLock { state in
            guard !state.isClosed else { return false }
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    /// Forgets `channel`: its handshake finished or failed.
    func remove(_ channel: any Channel) {
        _ = state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Closes every recorded channel, and every one added later.
    func closeAll() {
        let channels = state.withLock { state in
            state.isClosed = true
            defer { state.channels.removeAll() }
            return Array(state.channels.values)
        }
        for channel in channels { channel.close(promise: nil) }
    }
}
