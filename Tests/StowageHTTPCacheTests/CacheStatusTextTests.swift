import Testing

@testable import StowageHTTPCache

/// The `Cache-Status` field value (RFC 9211 §2) and the memory keys formed on every hit: both
/// written by hand for speed, so their exact text is pinned here.
@Suite struct CacheStatusTextTests {
    @Test(
        "Cache-Status: the outcome, then fwd-status, ttl, stored, collapsed and detail, in that order",
        arguments: [
            (CacheStatus(outcome: .hit, timeToLive: 57), "stowage; hit; ttl=57"),
            (CacheStatus(outcome: .hit), "stowage; hit"),
            (CacheStatus(outcome: .stale, timeToLive: -3), "stowage; hit; ttl=-3"),
            (
                CacheStatus(outcome: .stale, forwardStatus: 502, timeToLive: -3),
                "stowage; fwd=stale; fwd-status=502; ttl=-3"
            ),
            (
                CacheStatus(outcome: .miss, forwardStatus: 200, stored: true),
                "stowage; fwd=uri-miss; fwd-status=200; stored"
            ),
            (
                CacheStatus(outcome: .miss, forwardStatus: 200, stored: true, collapsed: true),
                "stowage; fwd=uri-miss; fwd-status=200; stored; collapsed"
            ),
            (
                CacheStatus(outcome: .revalidated, forwardStatus: 304, timeToLive: 60),
                "stowage; fwd=stale; fwd-status=304; ttl=60"
            ),
            (CacheStatus(outcome: .bypass), "stowage; fwd=bypass"),
            (
                CacheStatus(cacheName: "edge-2", outcome: .miss, forwardStatus: 503, detail: "upstream timed out"),
                "edge-2; fwd=uri-miss; fwd-status=503; detail=\"upstream timed out\""
            ),
        ]
    )
    func fieldValue(status: CacheStatus, text: String) {
        #expect(status.description == text)
    }

    @Test("hashed memory keys: 14 bytes, the prefix then 13 base-32 digits, one per hash and prefix")
    func hashedKeys() {
        var hashes: [Int] = [0, 1, -1, 31, 32, Int.max, Int.min]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 { hashes.append(Int(bitPattern: UInt(generator.next()))) }
        var seen: Set<String> = []
        for hash in Set(hashes) {
            let prepared = HTTPCache.preparedKey(hash)
            let spilled = HashedMemoryKey.make(prefix: 2, hash: hash)
            for (key, prefix) in [(prepared, UInt8(1)), (spilled, UInt8(2))] {
                let bytes = Array(key.utf8)
                #expect(bytes.count == 14)
                #expect(bytes.first == prefix)
                #expect(bytes.dropFirst().allSatisfy { (48...57).contains($0) || (97...118).contains($0) })
                #expect(seen.insert(key).inserted, "\(hash) gives a key another hash gave")
            }
        }
        #expect(HashedMemoryKey.make(prefix: 1, hash: 0) == "\u{1}0000000000000")
        #expect(HashedMemoryKey.make(prefix: 1, hash: -1) == "\u{1}fvvvvvvvvvvvv")
        #expect(HashedMemoryKey.make(prefix: 1, hash: 33) == "\u{1}0000000000011")
    }
}
