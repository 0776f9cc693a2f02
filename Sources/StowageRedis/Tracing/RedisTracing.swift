import Tracing

/// The names and attribute keys of the spans the Redis clients (``RedisClient``,
/// ``RedisClusterClient``) record through swift-distributed-tracing, following OpenTelemetry's
/// database semantic conventions. They are stable: dashboards and alerts may match on them.
///
/// One span of kind `client` per ``RedisClient/send(_:)`` (``SpanName/command``) and per
/// ``RedisClient/pipeline(_:)`` (``SpanName/pipeline``), from the wait for a connection until
/// the reply; an error (a server error reply, a timeout, a closed connection) is recorded on it.
/// Spans carry the command's name, never its arguments: keys and values may hold user data.
public enum RedisTracing {
    /// Span names.
    public enum SpanName {
        /// One command and its reply.
        public static let command = "stowage.redis.command"
        /// Several commands sent in one write, and their replies.
        public static let pipeline = "stowage.redis.pipeline"
    }

    /// Attribute keys.
    public enum Attribute {
        /// OpenTelemetry `db.system.name`: always `"redis"`.
        public static let systemName = "db.system.name"
        /// OpenTelemetry `db.operation.name`: the command's name in upper case (`"GET"`); for a
        /// pipeline, `"BATCH GET"` when every command has the same name, else `"BATCH"`.
        public static let operationName = "db.operation.name"
        /// OpenTelemetry `db.operation.batch.size`: the commands in a pipeline, an integer.
        public static let batchSize = "db.operation.batch.size"
        /// OpenTelemetry `server.address`: the server's host (standalone client only).
        public static let serverAddress = "server.address"
        /// OpenTelemetry `server.port`: the server's port (standalone client only), an integer.
        public static let serverPort = "server.port"
    }
}

extension RedisConfiguration {
    /// The tracer for one command: ``tracer``, else the process's.
    var activeTracer: any Tracer { tracer ?? InstrumentationSystem.tracer }
}

extension Span {
    /// The attributes of a span for `commands` (one for ``RedisTracing/SpanName/command``) sent
    /// to `server` (`nil` for a cluster, whose node is picked inside the span).
    func recordRedis(_ commands: [RedisCommand], server: RedisConfiguration?) {
        guard isRecording else { return }
        attributes[RedisTracing.Attribute.systemName] = "redis"
        if commands.count == 1 {
            attributes[RedisTracing.Attribute.operationName] = commands[0].name
        } else {
            let names = Set(commands.map(\.name))
            attributes[RedisTracing.Attribute.operationName] = names.count == 1 ? "BATCH \(names.first!)" : "BATCH"
            attributes[RedisTracing.Attribute.batchSize] = commands.count
        }
        if let server {
            attributes[RedisTracing.Attribute.serverAddress] = server.host
            attributes[RedisTracing.Attribute.serverPort] = server.port
        }
    }
}
