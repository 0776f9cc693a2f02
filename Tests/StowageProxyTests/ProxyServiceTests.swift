import Foundation
import Logging
import ServiceLifecycle
import StowageCore
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import Testing

@Suite("CachingProxy as a Service")
struct ProxyServiceTests {
    @Test("in a ServiceGroup it serves until a graceful shutdown, then stops accepting connections")
    func gracefulShutdown() async throws {
        let origin = try await TestOriginServer.start { _ in
            .init(fields: [("Cache-Control", "max-age=60")], body: "hello")
        }
        let directory = try TemporaryDirectory()
        let port = try freeLoopbackPort()
        var configuration = ProxyConfiguration(
            upstream: try .init(parsing: origin.baseURL),
            cacheDirectory: directory.url.appending(path: "cache"),
            host: "127.0.0.1",
            port: port
        )
        configuration.logger.logLevel = .critical
        let proxy = try CachingProxy(configuration: configuration)
        let group = ServiceGroup(
            services: [proxy],
            gracefulShutdownSignals: [],
            cancellationSignals: [],
            logger: Logger(label: "test", factory: SwiftLogNoOpLogHandler.init)
        )
        let running = Task { try await group.run() }
        try await eventually {
            (try? await onOwnThread { try RawSocket(port: port) }) != nil
        }
        let reply = try await onOwnThread { () -> String? in
            let socket = try RawSocket(port: port)
            socket.send("GET /a HTTP/1.1\r\nHost: proxy\r\n\r\n")
            return socket.readResponse()?.body
        }
        #expect(reply == "hello")
        await group.triggerGracefulShutdown()
        try await running.value
        #expect((try? await onOwnThread { try RawSocket(port: port) }) == nil, "still accepting")
        await origin.stop()
    }
}
