import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A real HTTP origin on 127.0.0.1 (a free port) for the client and proxy tests: each test
/// scripts its responses, and the server records every request so tests can check what reached
/// the origin.
///
/// ```swift
/// let origin = try await TestOriginServer.start { request in
///     .init(status: 200, fields: [("Cache-Control", "max-age=60")], body: "hello")
/// }
/// defer { Task { await origin.stop() } }
/// ```
public final class TestOriginServer: Sendable {
    /// A request as the origin received it.
    public struct Received: Sendable {
        /// The request's method, target and fields.
        public let head: HTTPRequest
        /// The request's body.
        public let body: [UInt8]
        /// 1 for the first request the server received.
        public let index: Int
    }

    /// A scripted response.
    public struct Reply: Sendable {
        /// The status code to answer with.
        public var status: Int
        /// The response's fields, in order.
        public var fields: [(String, String)]
        /// The response's body.
        public var body: [UInt8]
        /// Time to wait before answering (slow origins, collapsing).
        public var delay: Duration?

        /// A reply with a text body, sent after `delay` when given.
        public init(status: Int = 200, fields: [(String, String)] = [], body: String = "", delay: Duration? = nil) {
            self.init(status: status, fields: fields, bytes: Array(body.utf8), delay: delay)
        }

        /// A reply with a byte body, sent after `delay` when given.
        public init(status: Int = 200, fields: [(String, String)] = [], bytes: [UInt8], delay: Duration? = nil) {
            self.status = status
            self.fields = fields
            self.body = bytes
            self.delay = delay
        }
    }

    /// What the origin answers to each request it receives.
    public typealias Script = @Sendable (Received) async throws -> Reply

    /// The port the server listens on.
    public let port: Int
    private let task: Task<Void, any Error>
    private init(port: Int, task: Task<Void, any Error>, state: SharedState) {
        self.port = port
        self.task = task
        self.state = state
    }

    private let state: SharedState

    final class SharedState: Sendable {
        let log = Mutex<[HTTPRequest]>([])
        let script: Mutex<Script>
        init(script: @escaping Script) { self.script = Mutex(script) }
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Every request received so far.
    public var requests: [HTTPRequest] { state.log.withLock { $0 } }
    /// How many requests were received.
    public var requestCount: Int { state.log.withLock { $0.count } }
    /// How many requests for `path` were received.
    public func requestCount(path: String) -> Int { state.log.withLock { $0.filter { $0.path == path }.count } }

    /// Replaces the script.
    public func setScript(_ script: @escaping Script) { state.script.withLock { $0 = script } }

    /// Starts a server on 127.0.0.1 with a free port.
    public static func start(_ script: @escaping Script) async throws -> TestOriginServer {
        let state = SharedState(script: script)
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            var request = request
            let body = try await request.collectBody(upTo: 64 << 20)
            let index = state.log.withLock { log in
                log.append(request.head)
                return log.count
            }
            let script = state.script.withLock { $0 }
            let reply = try await script(
                Received(head: request.head, body: Array(body.readableBytesView), index: index)
            )
            if let delay = reply.delay { try await Task.sleep(for: delay) }
            var fields = HTTPFields()
            for (name, value) in reply.fields { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            if fields[.contentLength] == nil, reply.status != 304 { fields[.contentLength] = String(reply.body.count) }
            return Response(
                status: .init(code: reply.status),
                headers: fields,
                body: reply.status == 304 ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: reply.body))
            )
        }
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "test-origin")
        logger.logLevel = .critical
        let app = Application(
            responder: responder,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger
        )
        let task = Task { try await app.run() }
        var iterator = portStream.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            task.cancel()
            throw OriginError(message: "the test origin did not start")
        }
        return TestOriginServer(port: port, task: task, state: state)
    }

    /// Stops the server and waits until it has closed.
    public func stop() async {
        task.cancel()
        _ = await task.result
    }

    struct OriginError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
