import NIOCore
import Testing

@testable import StowageSharedTier

/// Messages on the invalidation channel come from anyone who may PUBLISH on the server: a huge
/// one used to hold other invalidations up for seconds while it was read key by key.
@Suite struct InvalidationMessageTests {
    @Test("a message of this format decodes to its sender and keys, keys with any character")
    func decodesKeys() {
        let message = InvalidationPublisher.encode(nodeID: "n1", keys: ["a", "b:c\nd", ""])
        guard case .keys(let sender, let keys) = InvalidationPublisher.decode(message) else {
            Issue.record("not decoded")
            return
        }
        #expect(sender == "n1" && keys == ["a", "b:c\nd", ""])
    }

    @Test(
        "a message over 1 MiB, or with more keys than four messages carry, is oversized (read as .all), not read key by key"
    )
    func oversizedMessages() {
        let huge = InvalidationPublisher.encode(nodeID: "x", keys: [String(repeating: "k", count: 2 << 20)])
        let many = InvalidationPublisher.encode(nodeID: "x", keys: (0..<5_000).map { "k\($0)" })
        for message in [huge, many] {
            guard case .oversized = InvalidationPublisher.decode(message) else {
                Issue.record("a message of \(message.readableBytes) bytes was not oversized")
                continue
            }
        }
    }

    @Test("junk is malformed (ignored): no newline, a negative or absurd length, a length past the end")
    func malformedMessages() {
        for text in ["no newline", "n\nx:abc", "n\n-1:", "n\n99999999999999999999:a", "n\n5:ab"] {
            guard case .malformed = InvalidationPublisher.decode(ByteBuffer(string: text)) else {
                Issue.record("\(text.debugDescription) was not malformed")
                continue
            }
        }
    }
}
