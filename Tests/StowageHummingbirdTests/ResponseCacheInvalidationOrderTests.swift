import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StowageHTTPCache
import StowageHummingbird
import StowageTestSupport
import Testing

@Suite("Hummingbird response cache: invalidations ordered with the handler calls under way")
struct ResponseCacheInvalidationOrderTests {
    @Test(
        "a handler's answer begun before an invalidation is served to its request but never stored after the refetch",
        arguments: ["url", "prefix", "tag"]
    )
    func heldHandlerAnswerIsNotStored(invalidation: String) async throws {
        let calls = CallCounter()
        let arrived = Gate()
        let held = Gate()
        try await withCachedApp { router in
            router.get("/page") { _, _ in
                let call = calls.increment()
                if call == 1 {
                    // The first answer is held until the refetch after the invalidation is stored.
                    arrived.open()
                    await held.wait()
                }
                return Response(
                    status: .ok,
                    headers: [.cacheControl: "max-age=600", surrogateKey: "page"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: call == 1 ? "v1" : "v2"))
                )
            }
        } _: { client, cache in
            let first = Task { try await client.execute(uri: "/page", method: .get).body.text }
            await arrived.wait()
            switch invalidation {
            case "url": _ = try await cache.invalidate(url: "http://localhost/page")
            case "prefix": _ = try await cache.invalidate(urlPrefix: "http://localhost/")
            default: _ = try await cache.invalidate(tag: "page")
            }
            let refetched = try await client.execute(uri: "/page", method: .get)
            #expect(refetched.body.text == "v2")
            #expect(calls.value == 2, "the refetch did not wait for the held answer")
            held.open()
            #expect(try await first.value == "v1")
            let after = try await client.execute(uri: "/page", method: .get)
            #expect(after.body.text == "v2", "the held v1 replaced the refetched v2")
            #expect(after.headers[.init("Cache-Status")!]?.contains("hit") == true)
            #expect(calls.value == 2)
        }
    }
}
