import Logging
import NIOCore
import Synchronization

/// A pub/sub subscription on its own connection that survives outages: when the connection
/// drops it reconnects with backoff and subscribes again, and says so in ``events``.
///
/// ```swift
/// let subscription = redis.subscribe(to: ["news"])
/// for await event in subscription.events {
///     if case .message(_, let payload) = event { print(String(buffer: payload)) }
/// }
/// ```
///
/// Messages published while the subscription was disconnected are lost (pub/sub keeps no
/// history); a ``Event/subscribed`` after a ``Event/disconnected(_:)`` tells the consumer that
/// there may be a gap, e.g. to drop cached copies it can no longer trust.
public final class RedisSubscription: Sendable {
    /// What happens on the subscription.
    public enum Event: Sendable {
        /// The server confirmed the subscription to every channel (first time and after each reconnect).
        case subscribed
        /// A message published to `channel`.
        case message(channel: String, payload: ByteBuffer)
        /// The connection broke or could not be made; a reconnect follows.
        case disconnected(RedisError)
    }

    /// Every event, in order, until ``cancel()``.
    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(
        channels: [String],
        configuration: RedisConfiguration,
        servers: @escaping @Sendable () -> [RedisConfiguration]
    ) {
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(10_000))
        let continuation = continuation
        let runner = Task {
            await Self.run(
                channels: channels,
                configuration: configuration,
                servers: servers,
                continuation: continuation
            )
        }
        task.withLock { $0 = runner }
        continuation.onTermination = { _ in runner.cancel() }
    }

    /// Stops the subscription and closes its connection; ``events`` finishes.
    public func cancel() {
        task.withLock { $0?.cancel() }
        continuation.finish()
    }

    /// Returns when the subscription has ended and its connection has closed, after ``cancel()``.
    func finished() async {
        await task.withLock { $0 }?.value
    }

    deinit { cancel() }

    private static func run(
        channels: [String],
        configuration: RedisConfiguration,
        servers: @Sendable () -> [RedisConfiguration],
        continuation: AsyncStream<Event>.Continuation
    ) async {
        var failures = 0
        var attempt = 0
        while !Task.isCancelled {
            let candidates = servers()
            let server = candidates.isEmpty ? configuration : candidates[attempt % candidates.count]
            attempt += 1
            let confirmed = Atomic<Int>(0)
            do {
                let connection = try await RedisConnection.connect(server) { push in
                    guard let parts = push.elements, let kind = parts.first?.string?.lowercased() else { return }
                    switch kind {
                    case "message" where parts.count == 3:
                        if let channel = parts[1].string, let payload = parts[2].bytes {
                            continuation.yield(.message(channel: channel, payload: payload))
                        }
                    case "subscribe":
                        if confirmed.add(1, ordering: .relaxed).newValue == channels.count {
                            continuation.yield(.subscribed)
                        }
                    default: break
                    }
                }
                failures = 0
                try await connection.routeEverythingAsPush()
                try await connection.sendWithoutReply(RedisCommand("SUBSCRIBE", channels.map { RedisArgument($0) }))
                await withTaskCancellationHandler {
                    try? await connection.closeFuture.get()
                } onCancel: {
                    connection.channel.close(promise: nil)
                }
                if Task.isCancelled { return }
                continuation.yield(
                    .disconnected(
                        RedisError(
                            code: .connectionClosed,
                            message: "the subscription's connection closed; resubscribing",
                            server: server.address
                        )
                    )
                )
            } catch {
                failures += 1
                let redisError =
                    error as? RedisError
                    ?? RedisError(
                        code: .connectionFailed,
                        message: "cannot subscribe",
                        server: server.address,
                        cause: error
                    )
                continuation.yield(.disconnected(redisError))
                try? await configuration.backoffClock.sleep(
                    for: configuration.reconnectBackoff.delay(afterFailures: failures)
                )
            }
        }
    }
}
