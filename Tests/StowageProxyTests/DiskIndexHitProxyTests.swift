import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

@testable import StowageProxy

/// Hits read from the disk index on the event loop (`LoopHitResponder` with
/// `HTTPCache.answerFromMemory(…readsDiskIndex: true…)`): with a memory level too small to keep a
/// response, every hit is one, and what a client sees must be what the async path would send.
/// (`purgeReachesEveryConnection` runs with such a memory too: a purge is final for these hits.)
extension EncodedHitAttackTests {
    @Test(
        "with a memory too small to keep a response, hits come from the disk index, the same bytes at and around the inline bound",
        arguments: [0, 1, 1_000, 16_384, 16_385, 100_000]
    )
    func diskIndexHitBodies(count: Int) async throws {
        try await ProxyHarness.run(
            configure: { $0.cache.memoryCapacity = ByteCount(20) },
            script: Self.script
        ) { h in
            let expected = (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            #expect(try await h.get("/bytes/\(count)").body == expected)
            let port = h.proxyPort
            let request = "GET /bytes/\(count) HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let responses = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(request + request + request)
                return Self.read(socket, bodiless: [false, false, false])
            }
            #expect(responses.count == 3)
            for response in responses {
                #expect(response.status == 200)
                #expect(response.body == expected)
                #expect(response.field("content-length") == String(count))
                #expect(response.field("cache-status")?.contains("hit") == true, "\(response)")
            }
            #expect(h.origin.requestCount == 1)
        }
    }

    @Test(
        "300 URLs hit at once from the disk index while trims remove entries under them: each client gets its own body"
    )
    func diskIndexHitsWhileTrimming() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.cache.memoryCapacity = ByteCount(20)
                // About half the 300 responses fit: the disk cache trims as the misses store.
                $0.cache.diskCapacity = ByteCount(150_000)
            },
            script: { received in
                let path = received.head.path ?? "/"
                return .init(fields: [("Cache-Control", "max-age=600")], body: String(repeating: path + ";", count: 50))
            }
        ) { h in
            let (wrong, hits) = try await withThrowingTaskGroup(of: ([String], Int).self) { group in
                for worker in 0..<16 {
                    group.addTask {
                        var wrong: [String] = []
                        var hits = 0
                        for round in 0..<60 {
                            let path = "/u/\((worker * 7 + round * 13) % 300)"
                            let reply = try await h.get(path)
                            if reply.status != 200 || reply.text != String(repeating: path + ";", count: 50) {
                                wrong.append("\(path): \(reply.status) \(reply.text.prefix(20))")
                            }
                            if reply.cacheStatus.contains("hit") { hits += 1 }
                        }
                        return (wrong, hits)
                    }
                }
                var all: ([String], Int) = ([], 0)
                for try await part in group { all = (all.0 + part.0, all.1 + part.1) }
                return all
            }
            #expect(wrong.isEmpty, "\(wrong.prefix(5))")
            #expect(hits > 0, "some requests were disk-index hits")
            #expect(h.origin.requestCount > 300, "trims removed responses that were asked for again")
        }
    }
}

extension EncodedHitAttackTests {
    @Test(
        "a stored body's file replaced under the proxy (a FIFO, a link, cut short, emptied): a refetch, never a hang nor other bytes",
        arguments: ["fifo", "link", "truncated", "empty"]
    )
    func bodyFileReplaced(_ damage: String) async throws {
        try await ProxyHarness.run(
            // Nothing in memory: every hit reads the disk (a 100 KB body is in a file, read off the loop).
            configure: { $0.cache.memoryCapacity = ByteCount(20) },
            script: Self.script
        ) { h in
            let expected = (0..<100_000).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            #expect(try await h.get("/bytes/100000").body == expected)
            let hit = try await h.get("/bytes/100000")
            #expect(hit.body == expected && hit.cacheStatus.contains("hit"), "\(hit.cacheStatus)")
            let disk = try #require(h.cache?.disk)
            try await disk.flush()
            let data = disk.directory.appending(path: "data").path
            let names = FileManager.default.enumerator(atPath: data)?.allObjects.compactMap { $0 as? String } ?? []
            let files = names.filter { $0.contains("-") }
            #expect(files.count == 1, "\(names)")
            let path = data + "/" + (files.first ?? "")
            switch damage {
            case "fifo":
                #expect(unlink(path) == 0 && mkfifo(path, 0o600) == 0)
            case "link":
                // A link to a file of the same length and other bytes.
                let other = disk.directory.appending(path: "other").path
                #expect(FileManager.default.createFile(atPath: other, contents: Data(repeating: 0x21, count: 100_000)))
                #expect(unlink(path) == 0 && symlink(other, path) == 0)
            case "truncated":
                #expect(truncate(path, 50_000) == 0)
            default:
                #expect(truncate(path, 0) == 0)
            }
            for _ in 1...2 {
                let reply = try await h.get("/bytes/100000")
                #expect(reply.status == 200 && reply.body == expected, "\(damage): \(reply.status) \(reply.body.count)")
            }
            #expect(h.origin.requestCount == 2, "\(damage): the damaged body was fetched again, once")
        }
    }
}

extension EncodedHitAttackTests {
    @Test(
        "the index file truncated or replaced by an empty file under a running proxy: every request is still answered with its own body",
        arguments: ["truncated", "replaced"]
    )
    func indexFileDamagedUnderTheProxy(_ damage: String) async throws {
        try await ProxyHarness.run(
            configure: { $0.cache.memoryCapacity = ByteCount(20) },
            script: Self.script
        ) { h in
            #expect(try await h.get("/cached").text == "body of /cached")
            let disk = try #require(h.cache?.disk)
            try await disk.flush()
            let index = disk.directory.appending(path: "index.sqlite").path
            if damage == "truncated" {
                #expect(truncate(index, 0) == 0)
            } else {
                let aside = disk.directory.appending(path: "aside").path
                #expect(FileManager.default.createFile(atPath: aside, contents: Data()))
                #expect(rename(aside, index) == 0)
            }
            for path in ["/cached", "/new", "/cached", "/new"] {
                let reply = try await h.get(path)
                #expect(reply.status == 200 && reply.text == "body of \(path)", "\(damage) \(path): \(reply.status)")
            }
        }
    }
}
