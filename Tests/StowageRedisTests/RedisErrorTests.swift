import Foundation
import NIOCore
import StowageRedis
import Testing

/// `RedisError` has `StowageError`'s shape: a code to match on (also as a `catch` pattern), a
/// message that says what to do, and a `Sendable` cause.
@Suite struct RedisErrorTests {
    @Test("a URL with no host matches `catch RedisError.Code.invalidURL`, and no other code")
    func invalidURLMatchesAsPattern() {
        var caught: RedisError.Code?
        do {
            _ = try RedisConfiguration(url: "http://127.0.0.1:6379")
        } catch RedisError.Code.timeout {
            caught = .timeout
        } catch RedisError.Code.invalidURL {
            caught = .invalidURL
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(caught == .invalidURL)
    }

    @Test("bytes that are not RESP match `RedisError.Code.protocolViolation`, and the message says what to check")
    func protocolViolationMatchesAsPattern() throws {
        var buffer = ByteBuffer(string: "HTTP/1.1 400 Bad Request\r\n\r\n")
        let error = try #require(throws: RedisError.self) { _ = try RESPDecoder().decode(&buffer) }
        #expect(RedisError.Code.protocolViolation ~= error)
        #expect(!(RedisError.Code.server ~= error))
        #expect(error.message.contains("Redis-compatible server"))
        #expect(error.description.hasPrefix("\(RedisError.Code.protocolViolation): "))
    }

    @Test("a code pattern matches only a RedisError: another error type with a cause is not one")
    func patternNeedsARedisError() {
        let cause = CancellationError()
        let error = RedisError(code: .timeout, message: "PING took longer than 1 s", cause: cause)
        #expect(RedisError.Code.timeout ~= error)
        #expect(!(RedisError.Code.timeout ~= cause))
        let sendable: any Error & Sendable = error
        #expect((sendable as? RedisError)?.cause is CancellationError)
        #expect(error.description.hasSuffix("(CancellationError())"))
    }
}
