import AsyncHTTPClient
import Foundation
import Logging
import StowageCore
import StowageHTTPClient
import StowageTestSupport
import Testing

@testable import StowageProxy

/// One caching proxy per cache directory (``CacheDirectoryClaim``): each keeps responses in its
/// own memory, and a purge through one does not reach the other's, so a second proxy on the
/// directory is refused instead of serving what a purge removed.
@Suite struct CacheDirectoryClaimTests {
    private func configuration(_ directory: URL) throws -> ProxyConfiguration {
        try ProxyConfiguration(upstream: .init(parsing: "http://127.0.0.1:9"), cacheDirectory: directory, port: 0)
    }

    /// What making a proxy for `configuration` throws; `nil`, the proxy's upstream client closed
    /// (it is never run), when it makes one.
    private func refusal(_ configuration: ProxyConfiguration) async throws -> StowageError? {
        do {
            let proxy = try CachingProxy(configuration: configuration)
            try await proxy.transport.client.shutdown()
            return nil
        } catch let error as StowageError {
            return error
        }
    }

    @Test("a second proxy on the same cache directory is refused with .busy naming the directory and what to do")
    func secondProxyRefused() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        let first = try CachingProxy(configuration: configuration(directory))
        let error = try await refusal(configuration(directory))
        #expect(error?.code == .busy)
        let message = error?.message ?? ""
        #expect(message.contains("another caching proxy serves from the cache directory"), "\(message)")
        #expect(message.contains("--cache-dir") && message.contains("--shared"), "\(message)")
        #expect(message.contains(directory.path(percentEncoded: false).trimmingCharacters(in: ["/"])), "\(message)")
        // The same directory through a symbolic link is the same directory.
        try scratch.symlink("link", to: directory.path)
        #expect(try await refusal(configuration(scratch.url.appending(path: "link")))?.code == .busy)
        // Another directory is another proxy's.
        let other = try CachingProxy(configuration: configuration(scratch.url.appending(path: "other")))
        // Never run: their upstream clients are closed here.
        try await first.transport.client.shutdown()
        try await other.transport.client.shutdown()
    }

    @Test(
        "a proxy that has run and stopped gives its directory up, though the object lives on: a restart in-process works"
    )
    func stoppedProxyReleasesTheDirectory() async throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "cache")
        var configuration = try configuration(directory)
        configuration.logger.logLevel = .critical
        let first = try CachingProxy(configuration: configuration)
        let (ports, listening) = AsyncStream<Int>.makeStream()
        let run = Task { try await first.run(handlingSignals: false) { listening.yield($0) } }
        var iterator = ports.makeAsyncIterator()
        _ = await iterator.next()
        #expect(try await refusal(configuration)?.code == .busy)
        run.cancel()
        _ = await run.result
        let second = try CachingProxy(configuration: configuration)
        try await second.transport.client.shutdown()  // never run
        withExtendedLifetime(first) {}
    }

    @Test("the claim is the lock file's: held while its holder lives, free once it is released")
    func claimFollowsItsHolder() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.url.appending(path: "new/cache")
        var claim: LockFile? = try CacheDirectoryClaim.claim(directory)
        #expect(FileManager.default.fileExists(atPath: directory.path + "/proxy.lock"))
        #expect(throws: StowageError.self) { _ = try CacheDirectoryClaim.claim(directory) }
        withExtendedLifetime(claim) {}
        claim = nil
        _ = try CacheDirectoryClaim.claim(directory)
    }
}
