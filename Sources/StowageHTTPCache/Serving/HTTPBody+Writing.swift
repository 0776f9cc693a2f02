import Synchronization

extension HTTPBody {
    /// A body that `produce` writes as it is read: for a server's handler that pushes its
    /// response body (Hummingbird's `ResponseBodyWriter`, Vapor's body stream) into a cache
    /// that pulls chunks.
    ///
    /// `produce` starts in a task of its own when the body is first iterated, never before, so
    /// a body nobody reads costs nothing. Each ``Writer/write(_:)`` waits until the reader has
    /// taken the chunk before it returns (one chunk in flight, as a socket's backpressure
    /// does). When `produce` returns, the body ends; when it throws, the reader's next chunk
    /// throws that error. When the reader stops reading (its iterator is dropped or its task
    /// cancelled), the producing task is cancelled and its next write throws
    /// `CancellationError`.
    ///
    /// ```swift
    /// let body = HTTPBody(length: nil) { writer in
    ///     for line in lines { try await writer.write(Array(line.utf8)) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - length: The total length when known (e.g. from `Content-Length`).
    ///   - produce: Writes the body's chunks; iterated bodies call it once.
    public init(length: Int64?, writing produce: @escaping @Sendable (Writer) async throws -> Void) {
        self.init(length: length, producer: { PipeReader(producing: produce) })
    }

    /// Hands a produced body's chunks to its reader, one at a time (``init(length:writing:)``).
    public struct Writer: Sendable {
        let pipe: BodyPipe

        /// Passes `chunk` to the reader; returns once the reader has taken it.
        ///
        /// - Throws: `CancellationError` when the reader has stopped reading.
        public func write(_ chunk: [UInt8]) async throws {
            guard !chunk.isEmpty else { return }
            try await pipe.write(chunk)
        }
    }
}

/// The reading end of a produced body: starts the producing task, and cancels it when dropped.
final class PipeReader: ChunkProducing {
    let pipe = BodyPipe()
    let task: Task<Void, Never>

    init(producing produce: @escaping @Sendable (HTTPBody.Writer) async throws -> Void) {
        let pipe = self.pipe
        task = Task {
            do {
                try await produce(HTTPBody.Writer(pipe: pipe))
                pipe.finish(throwing: nil)
            } catch {
                pipe.finish(throwing: error)
            }
        }
    }

    func nextChunk() async throws -> [UInt8]? { try await pipe.read() }

    deinit {
        pipe.closeReader()
        task.cancel()
    }
}

/// One chunk handed from a writing task to a reading one, each waiting for the other.
final class BodyPipe: Sendable {
    private struct State {
        var chunk: [UInt8]?
        var end: Result<Void, any Error>?
        var isReaderClosed = false
        var reader: CheckedContinuation<[UInt8]?, any Error>?
        var writer: CheckedContinuation<Void, any Error>?
    }

    private let state = Mutex(State())

    /// Whether a writer is parked on a chunk the reader has not taken: the event a test waits
    /// for to know a write is held by backpressure.
    var hasParkedWriter: Bool { state.withLock { $0.writer != nil } }

    /// Waits until the reader takes `chunk`.
    func write(_ chunk: [UInt8]) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                state.withLock { state in
                    if state.isReaderClosed || Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else if let reader = state.reader {
                        state.reader = nil
                        reader.resume(returning: chunk)
                        continuation.resume()
                    } else {
                        state.chunk = chunk
                        state.writer = continuation
                    }
                }
            }
        } onCancel: {
            closeReader()
        }
    }

    /// Ends the body: at its end with `nil`, or with `error`.
    func finish(throwing error: (any Error)?) {
        state.withLock { state in
            guard state.end == nil else { return }
            state.end = error.map { .failure($0) } ?? .success(())
            if let reader = state.reader {
                state.reader = nil
                if let error { reader.resume(throwing: error) } else { reader.resume(returning: nil) }
            }
        }
    }

    /// The next chunk, `nil` at the end; throws what the writer threw.
    func read() async throws -> [UInt8]? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, any Error>) in
                state.withLock { state in
                    if let chunk = state.chunk {
                        state.chunk = nil
                        state.writer?.resume()
                        state.writer = nil
                        continuation.resume(returning: chunk)
                    } else if let end = state.end {
                        switch end {
                        case .success: continuation.resume(returning: nil)
                        case .failure(let error): continuation.resume(throwing: error)
                        }
                    } else if state.isReaderClosed || Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        state.reader = continuation
                    }
                }
            }
        } onCancel: {
            closeReader()
        }
    }

    /// The reader is gone (or its task cancelled): a waiting writer and a waiting read throw
    /// `CancellationError`.
    func closeReader() {
        state.withLock { state in
            state.isReaderClosed = true
            state.chunk = nil
            state.writer?.resume(throwing: CancellationError())
            state.writer = nil
            state.reader?.resume(throwing: CancellationError())
            state.reader = nil
        }
    }
}
