import AsyncHTTPClient
import HTTPTypes
import Logging
import ServiceLifecycle
import StowageHTTPCache
import StowageHTTPClient
import StowageHTTPTestSupport
import Testing

/// The client as a swift-service-lifecycle `Service`, in a real `ServiceGroup`.
@Suite struct CachingHTTPClientServiceTests {
    func group(_ services: [any Service]) -> ServiceGroup {
        ServiceGroup(
            services: services,
            gracefulShutdownSignals: [],
            cancellationSignals: [],
            logger: Logger(label: "test", factory: SwiftLogNoOpLogHandler.init)
        )
    }

    func get(_ origin: TestOriginServer) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: "/a")
    }

    func isAlreadyShutdown(_ error: any Error) -> Bool {
        (error as? HTTPClientError) == .alreadyShutdown
    }

    @Test("in a ServiceGroup it serves until a graceful shutdown, then its own AsyncHTTPClient is shut down")
    func gracefulShutdownEndsRunAndTheHTTPClient() async throws {
        let origin = try await TestOriginServer.start { _ in .init(fields: [("Cache-Control", "no-store")], body: "ok")
        }
        let client = CachingHTTPClient(cache: nil)
        let group = group([client])
        let running = Task { try await group.run() }

        let served = try await client.execute(get(origin))
        #expect(String(decoding: try await served.body.collect(upTo: 1 << 10), as: UTF8.self) == "ok")

        await group.triggerGracefulShutdown()
        try await running.value
        await #expect(performing: { try await client.execute(get(origin)) }, throws: isAlreadyShutdown)
        // The caller's own shutdown afterwards is no error: the client shuts down once.
        try await client.shutdown()
        await origin.stop()
    }

    @Test("cancelling the group's task ends run() too, and shuts the AsyncHTTPClient down")
    func cancellationEndsRun() async throws {
        let origin = try await TestOriginServer.start { _ in .init(fields: [], body: "ok") }
        let client = CachingHTTPClient(cache: nil)
        let running = Task { try await group([client]).run() }
        _ = try await client.execute(get(origin))
        running.cancel()
        _ = try? await running.value
        await #expect(performing: { try await client.execute(get(origin)) }, throws: isAlreadyShutdown)
        await origin.stop()
    }

    @Test("an AsyncHTTPClient the caller passed in stays the caller's: the group's shutdown leaves it running")
    func aCallersHTTPClientIsLeftRunning() async throws {
        let origin = try await TestOriginServer.start { _ in .init(fields: [("Cache-Control", "no-store")], body: "ok")
        }
        let httpClient = HTTPClient(eventLoopGroupProvider: .singleton)
        let client = CachingHTTPClient(cache: nil, httpClient: httpClient)
        let group = group([client])
        let running = Task { try await group.run() }
        await group.triggerGracefulShutdown()
        try await running.value
        let served = try await client.execute(get(origin))
        #expect(served.response.status == .ok)
        _ = try await served.body.collect(upTo: 1 << 10)
        try await httpClient.shutdown()
        await origin.stop()
    }
}
