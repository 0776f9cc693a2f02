import Foundation
import NIOCore
import StowageRedis
import StowageRedisTestSupport
import Testing

/// `rediss://` against a `redis-server` with a TLS port and a certificate from a throwaway CA.
@Suite(
    "RedisClient over TLS (rediss://)",
    .enabled(
        if: RedisServerProcess.isAvailable && TestCertificateAuthority.isAvailable,
        "redis-server or openssl is not installed"
    )
)
struct RedisTLSTests {
    /// A server with a plain port (for its own readiness check) and a TLS port, and the CA.
    private static func startServer() async throws -> (RedisServerProcess, tlsPort: Int, TestCertificateAuthority) {
        let authority = try TestCertificateAuthority(
            in: FileManager.default.temporaryDirectory.appending(path: "stowage-tls-\(UUID().uuidString)")
        )
        let tlsPort = try RedisServerProcess.freePort()
        let server = try await RedisServerProcess.start(
            extraArguments: authority.redisServerArguments(tlsPort: tlsPort)
        )
        return (server, tlsPort, authority)
    }

    private static func configuration(
        _ url: String,
        trusting authority: TestCertificateAuthority?
    ) throws
        -> RedisConfiguration
    {
        var configuration = try RedisConfiguration(url: url)
        configuration.connectTimeout = .seconds(30)
        configuration.commandTimeout = .seconds(30)
        if let authority { try configuration.trustCertificateAuthorities(pemFile: authority.certificate.path) }
        return configuration
    }

    @Test("rediss:// with the CA as trust root: values, pipelines and pub/sub run over TLS")
    func roundTripOverTLS() async throws {
        let (server, tlsPort, authority) = try await Self.startServer()
        defer {
            server.remove()
            try? FileManager.default.removeItem(at: authority.directory)
        }
        let configuration = try Self.configuration("rediss://localhost:\(tlsPort)", trusting: authority)
        #expect(configuration.tls != nil)
        let client = RedisClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        let value = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try await client.send(.set("tls:big", value: RedisArgument(value), expiry: .seconds(60)))
        #expect(try await client.send(.get("tls:big")).bytes.map { Data($0.readableBytesView) } == value)
        let replies = try await client.pipeline([.set("tls:a", value: "1"), .get("tls:a"), .ping])
        #expect(replies == [.simpleString("OK"), .bulkString("1"), .simpleString("PONG")])

        let subscription = client.subscribe(to: ["tls:news"])
        defer { subscription.cancel() }
        var events = subscription.events.makeAsyncIterator()
        var subscribed = false
        while !subscribed, let event = await events.next() {
            if case .subscribed = event { subscribed = true }
        }
        #expect(subscribed)
        try await client.send(.publish("tls:news", message: "over TLS"))
        var message: String?
        while message == nil, let event = await events.next() {
            if case .message(let channel, let payload) = event, channel == "tls:news" {
                message = String(buffer: payload)
            }
        }
        #expect(message == "over TLS")
        // The same port refuses plain TCP: the TLS really is in the way.
        var plain = try Self.configuration("redis://127.0.0.1:\(tlsPort)", trusting: nil)
        plain.connectTimeout = .seconds(3)
        let plainClient = RedisClient(configuration: plain)
        defer { Task { await plainClient.shutdown() } }
        await #expect(throws: RedisError.self) { try await plainClient.send(.ping) }
    }

    @Test("a certificate from an untrusted CA, or for another host name, fails with a typed .tls error")
    func untrustedCertificate() async throws {
        let (server, tlsPort, authority) = try await Self.startServer()
        defer {
            server.remove()
            try? FileManager.default.removeItem(at: authority.directory)
        }
        // System trust roots do not know the test CA.
        let untrusting = RedisClient(
            configuration: try Self.configuration("rediss://localhost:\(tlsPort)", trusting: nil)
        )
        defer { Task { await untrusting.shutdown() } }
        await #expect {
            try await untrusting.send(.ping)
        } throws: { error in
            (error as? RedisError)?.code == .tls
        }
        // Trusted CA, but the certificate names localhost, not the name the client verifies.
        var otherHost = try Self.configuration("rediss://localhost:\(tlsPort)", trusting: authority)
        otherHost.tlsServerHostname = "cache.example.com"
        let mismatched = RedisClient(configuration: otherHost)
        defer { Task { await mismatched.shutdown() } }
        await #expect {
            try await mismatched.send(.ping)
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .tls && error.description.contains("certificate")
        }
        // An address in the URL with the certificate's name to verify (and send as SNI) works.
        var byAddress = try Self.configuration("rediss://127.0.0.1:\(tlsPort)", trusting: authority)
        byAddress.tlsServerHostname = "localhost"
        let addressed = RedisClient(configuration: byAddress)
        defer { Task { await addressed.shutdown() } }
        #expect(try await addressed.send(.ping) == .simpleString("PONG"))
    }

    @Test("a CA file for a plain redis:// server, or one without certificates, is a typed .tls error")
    func badCertificateAuthorityFile() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "stowage-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let notPEM = directory.appending(path: "not.pem")
        try Data("hello".utf8).write(to: notPEM)
        var plain = try RedisConfiguration(url: "redis://127.0.0.1:6379")
        #expect {
            try plain.trustCertificateAuthorities(pemFile: notPEM.path)
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .tls && error.message.contains("rediss://")
        }
        var secure = try RedisConfiguration(url: "rediss://127.0.0.1:6380")
        for path in [notPEM.path, directory.appending(path: "missing.pem").path] {
            #expect {
                try secure.trustCertificateAuthorities(pemFile: path)
            } throws: { error in
                guard let error = error as? RedisError else { return false }
                return error.code == .tls && error.message.contains(path)
            }
        }
    }
}
