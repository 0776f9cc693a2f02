/// Something that runs Redis commands: one server (``RedisClient``) or a cluster
/// (``RedisClusterClient``). Code written against this protocol works with both.
public protocol RedisCommandExecuting: Sendable {
    /// Runs `command` and returns its reply.
    ///
    /// - Throws: ``RedisError``; a server error reply is `.server` with the server's message.
    @discardableResult
    func send(_ command: RedisCommand) async throws -> RESPValue

    /// Sends `commands` together (one round trip where they share a server) and returns their
    /// replies in order, error replies as values.
    func pipeline(_ commands: [RedisCommand]) async throws -> [RESPValue]

    /// A subscription to `channels` that reconnects (and resubscribes) by itself until cancelled.
    func subscribe(to channels: [String]) -> RedisSubscription

    /// Closes every connection; later commands fail with `.shutdown`.
    func shutdown() async
}
