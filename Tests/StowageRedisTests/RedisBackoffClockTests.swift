import StowageRedis
import StowageRedisTestSupport
import StowageTestSupport
import Testing

/// The waits between attempts run on ``RedisConfiguration/backoffClock``: a stepped clock moves
/// them, so the tests never wait out a backoff. The server is a loopback port nobody listens on,
/// which refuses every connect at once.
@Suite("Redis backoff clock")
struct RedisBackoffClockTests {
    /// A configuration for a port that refuses connects, with a 60 s backoff on `clock`.
    private func unreachable(on clock: SteppedClock) throws -> RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: try RedisServerProcess.freePort())
        configuration.reconnectBackoff = .init(initial: .seconds(60), maximum: .seconds(60))
        configuration.backoffClock = clock
        return configuration
    }

    /// The error `client` fails a `PING` with.
    private func failure(of client: RedisClient) async -> RedisError? {
        do {
            try await client.send(.ping)
            return nil
        } catch {
            return error as? RedisError
        }
    }

    @Test("after a failed connect, commands fail at once until the backoff has passed on the backoff clock")
    func poolBackoffFollowsClock() async throws {
        let clock = SteppedClock()
        let client = RedisClient(configuration: try unreachable(on: clock))
        defer { Task { await client.shutdown() } }
        let waiting = "the next attempt is in"
        let refused = await failure(of: client)
        #expect(refused?.code == .connectionFailed)
        #expect(refused?.message.contains(waiting) == false, "the first command tries to connect")
        clock.advance(by: .seconds(59))
        let during = await failure(of: client)
        #expect(during?.code == .connectionFailed)
        #expect(during?.message.contains(waiting) == true, "\(String(describing: during))")
        // Past the delay and its 20% jitter: the next command tries to connect again.
        clock.advance(by: .seconds(13))
        let after = await failure(of: client)
        #expect(after?.code == .connectionFailed)
        #expect(after?.message.contains(waiting) == false, "\(String(describing: after))")
    }

    @Test("a subscription that cannot connect tries again once the backoff has passed on the backoff clock")
    func subscriptionBackoffFollowsClock() async throws {
        let clock = SteppedClock()
        let client = RedisClient(configuration: try unreachable(on: clock))
        defer { Task { await client.shutdown() } }
        let subscription = client.subscribe(to: ["news"])
        defer { subscription.cancel() }
        var events = subscription.events.makeAsyncIterator()
        guard case .disconnected? = await events.next() else {
            Issue.record("the first connect did not fail")
            return
        }
        // The reconnect waits on the clock; a real 60 s wait never shows up here.
        try await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(72))
        guard case .disconnected? = await events.next() else {
            Issue.record("no second attempt after the backoff")
            return
        }
        try await eventually { clock.sleeperCount == 1 }
    }
}
