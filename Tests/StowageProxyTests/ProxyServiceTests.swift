import Foundation
import Logging
import ServiceLifecycle
import StowageCore
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

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
            (try? await offCooperativePool { try RawSocket(port: port) }) != nil
        }
        let reply = try await offCooperativePool { () -> String? in
            let socket = try RawSocket(port: port)
            socket.send("GET /a HTTP/1.1\r\nHost: proxy\r\n\r\n")
            return socket.readResponse()?.body
        }
        #expect(reply == "hello")
        await group.triggerGracefulShutdown()
        try await running.value
        #expect((try? await offCooperativePool { try RawSocket(port: port) }) == nil, "still accepting")
        await origin.stop()
    }

    /// A loopback port nothing listens on now (bound to port 0, then released).
    private func freeLoopbackPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw TestFailure("could not bind a loopback port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
