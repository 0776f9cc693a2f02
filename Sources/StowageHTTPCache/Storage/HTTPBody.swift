import StowageCore

/// A message body as a sequence of byte chunks: bytes in memory, or a stream read as it goes
/// (from the origin, or from a cache file), so a large body is never held whole.
///
/// ```swift
/// let body = HTTPBody(bytes: Array("hello".utf8))
/// for try await chunk in body { write(chunk) }
/// let all = try await body.collect(upTo: 1 << 20)
/// ```
///
/// A streamed body can be iterated once.
public struct HTTPBody: AsyncSequence, Sendable {
    /// The elements the sequence yields.
    public typealias Element = [UInt8]

    private enum Storage: Sendable {
        case bytes([UInt8])
        case stream(@Sendable () -> any ChunkProducing)
    }

    private let storage: Storage
    /// The body's length in bytes when known in advance.
    public let length: Int64?

    /// An empty body.
    public static let empty = HTTPBody(bytes: [])

    /// A body held in memory.
    public init(bytes: [UInt8]) {
        storage = .bytes(bytes)
        length = Int64(bytes.count)
    }

    /// A body read from `sequence` as it is iterated.
    ///
    /// - Parameters:
    ///   - sequence: The chunks; iterated once.
    ///   - length: The total length when known (e.g. from `Content-Length`).
    public init<S: AsyncSequence & Sendable>(_ sequence: S, length: Int64? = nil) where S.Element == [UInt8] {
        storage = .stream { IteratorBox(sequence.makeAsyncIterator()) }
        self.length = length
    }

    /// A body produced by calling `next` until it returns `nil`.
    package init(length: Int64?, makeNext: @escaping @Sendable () -> @Sendable () async throws -> [UInt8]?) {
        storage = .stream { ClosureProducer(next: makeNext()) }
        self.length = length
    }

    /// A body read from the producer `makeProducer` creates when iteration starts.
    init(length: Int64?, producer makeProducer: @escaping @Sendable () -> any ChunkProducing) {
        storage = .stream(makeProducer)
        self.length = length
    }

    /// The bytes, when the body is held in memory.
    public var bytesInMemory: [UInt8]? {
        if case .bytes(let bytes) = storage { return bytes }
        return nil
    }

    /// An iterator over the sequence's elements.
    public func makeAsyncIterator() -> AsyncIterator {
        switch storage {
        case .bytes(let bytes): AsyncIterator(pending: bytes.isEmpty ? nil : bytes, producer: nil)
        case .stream(let make): AsyncIterator(pending: nil, producer: make())
        }
    }

    /// Iterates the chunks.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var pending: [UInt8]?
        let producer: (any ChunkProducing)?

        /// The next chunk of the body, or `nil` at its end.
        public mutating func next() async throws -> [UInt8]? {
            if let chunk = pending {
                pending = nil
                return chunk
            }
            return try await producer?.nextChunk()
        }
    }

    /// All the bytes, at most `limit` of them.
    ///
    /// - Throws: `StowageError` with code `.tooLarge` when the body is longer than `limit`.
    public func collect(upTo limit: Int) async throws -> [UInt8] {
        if let bytes = bytesInMemory {
            guard bytes.count <= limit else { throw StowageError.bodyTooLarge(limit: limit) }
            return bytes
        }
        var result: [UInt8] = []
        for try await chunk in self {
            guard result.count + chunk.count <= limit else { throw StowageError.bodyTooLarge(limit: limit) }
            result += chunk
        }
        return result
    }
}

/// Something that hands out chunks one at a time.
protocol ChunkProducing: AnyObject {
    func nextChunk() async throws -> [UInt8]?
}

private final class IteratorBox<Iterator: AsyncIteratorProtocol>: ChunkProducing where Iterator.Element == [UInt8] {
    var iterator: Iterator
    init(_ iterator: Iterator) { self.iterator = iterator }
    func nextChunk() async throws -> [UInt8]? { try await iterator.next() }
}

private final class ClosureProducer: ChunkProducing {
    let next: @Sendable () async throws -> [UInt8]?
    init(next: @escaping @Sendable () async throws -> [UInt8]?) { self.next = next }
    func nextChunk() async throws -> [UInt8]? { try await next() }
}
