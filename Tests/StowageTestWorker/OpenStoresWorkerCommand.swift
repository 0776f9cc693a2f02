import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageHousekeeping
import StowageStores

/// `StowageTestWorker open-stores clear-caches ROOT`: stores a response in an HTTP cache kept in
/// memory only and in `HTTPCache.shared`, and a value in a standalone `MemoryCache`, runs
/// `ClearCaches(container: ROOT)`, and prints whether each still serves it before and after:
/// `before memory-only=hit shared=hit memory-cache=hit`, then `after memory-only=gone
/// shared=gone memory-cache=gone complete=true`. In a process of its own: a clear reaches every
/// cache kept in memory in its process, which would empty those of the tests running beside it.
enum OpenStoresWorkerCommand {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 3, arguments[1] == "clear-caches" else {
            fail("usage: StowageTestWorker open-stores clear-caches ROOT")
        }
        let caches = [("memory-only", try HTTPCache(directory: nil)), ("shared", HTTPCache.shared)]
        let memoryCache = try MemoryCache<String, String>(configuration: .init(name: "standalone"))
        memoryCache.setValue("kept", forKey: "k")
        let request = HTTPRequest(method: .get, scheme: "https", authority: "clear-caches.test", path: "/page")
        let fetch: HTTPFetch = { _, _ in
            var response = HTTPResponse(status: .ok)
            response.headerFields[.cacheControl] = "max-age=600"
            return (response, HTTPBody(bytes: Array("cached".utf8)))
        }
        func states() async -> String {
            var states: [String] = []
            for (name, cache) in caches {
                let served = try? await cache.respond(to: request, policy: .returnCacheDataDontLoad, fetch: fetch)
                states.append("\(name)=\(served.map { "\($0.outcome)" } ?? "gone")")
            }
            states.append("memory-cache=\(memoryCache.value(forKey: "k") == nil ? "gone" : "hit")")
            return states.joined(separator: " ")
        }
        for (_, cache) in caches { _ = try await cache.respond(to: request, fetch: fetch).body.collect(upTo: 1 << 10) }
        say("before " + (await states()))
        let report = try await ClearCaches(container: Container(root: URL(filePath: arguments[2]))).clear()
        say("after " + (await states()) + " complete=\(report.isComplete)")
    }
}
