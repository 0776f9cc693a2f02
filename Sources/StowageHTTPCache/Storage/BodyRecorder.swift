import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore
import Synchronization

/// Stores a body as it passes through to the caller: small bodies are buffered and written in
/// one piece, larger ones stream to a disk cache file once they pass the streaming threshold.
/// The variant record is written only after the whole body is stored, so a stored record always
/// has its complete body. `onDone` is called exactly once, with whether the response was stored.
final class BodyRecorder: Sendable {
    private struct State {
        var buffer: [UInt8] = []
        var received: Int64 = 0
        var write: DiskCache.StreamingWrite?
        var failed = false
        var done = false
    }

    private let cache: HTTPCache
    private let key: CacheKey
    private let record: VariantRecord
    /// The response's tags, and the invalidations begun before its request was sent: one that
    /// began since and covers it keeps the record from being stored (``InvalidationOrder``).
    private let order: (tags: [String], startedAt: UInt64)
    private let onDone: @Sendable (Bool) -> Void
    private let state = Mutex(State())

    init(
        cache: HTTPCache,
        key: CacheKey,
        record: VariantRecord,
        order: (tags: [String], startedAt: UInt64),
        onDone: @escaping @Sendable (Bool) -> Void
    ) {
        self.cache = cache
        self.key = key
        self.record = record
        self.order = order
        self.onDone = onDone
    }

    deinit { abandon() }

    /// Adds a chunk; failures only stop the recording, never the caller's stream.
    func append(_ chunk: [UInt8]) async {
        let limit = record.isMemoryOnly ? cache.memoryBodyLimit : cache.diskBodyLimit
        let action: (write: DiskCache.StreamingWrite?, flush: [UInt8])? = state.withLock { state in
            guard !state.failed, !state.done else { return nil }
            state.received += Int64(chunk.count)
            if state.received > limit {
                state.failed = true
                state.write?.cancel()
                state.buffer = []
                return nil
            }
            if let write = state.write { return (write, chunk) }
            state.buffer += chunk
            guard !record.isMemoryOnly, state.buffer.count > cache.configuration.streamingThreshold else { return nil }
            return (nil, [])
        }
        guard let action else { return }
        do {
            if let write = action.write {
                try await BlockingWork.run { try action.flush.withUnsafeBytes { try write.write($0) } }
                return
            }
            // Crossed the threshold: open a file and move the buffer to it.
            let bodyKey = record.bodyKey
            let disk = try cache.requireDisk()
            let write = try await BlockingWork.run { try disk.beginStreamingWrite(forKey: bodyKey) }
            let buffered = state.withLock { state -> [UInt8] in
                state.write = write
                defer { state.buffer = [] }
                return state.buffer
            }
            try await BlockingWork.run { try buffered.withUnsafeBytes { try write.write($0) } }
        } catch {
            cache.configuration.logger.warning(
                "could not store a response body: \(error)",
                metadata: ["uri": "\(key.uri)"]
            )
            state.withLock { state in
                state.failed = true
                state.write?.cancel()
            }
        }
    }

    /// The body ended: store it and its record.
    ///
    /// - Returns: Whether the body and its record were stored.
    @discardableResult
    func finish() async -> Bool {
        let outcome: (buffer: [UInt8], write: DiskCache.StreamingWrite?, size: Int64)? = state.withLock { state in
            guard !state.failed, !state.done else { return nil }
            return (state.buffer, state.write, state.received)
        }
        guard let outcome else {
            complete(stored: false)
            return false
        }
        var record = record
        record.stored.bodyLength = outcome.size
        // A stored `Content-Length` must frame the stored body (RFC 9112 §6.3): hits, HEADs and
        // streamed bodies are sent with it, so a will-cache hook that set one of its own (or an
        // origin that miscounted) must not desynchronize the connection a hit is served on.
        let storedLength = String(outcome.size)
        if let declared = record.stored.response.headerFields[.contentLength], declared != storedLength {
            record.stored.response.headerFields[.contentLength] = storedLength
        }
        do {
            if let write = outcome.write {
                try await BlockingWork.run { try write.commit() }
                // Streamed to disk: share it from there if it is small enough for the shared level.
                if cache.configuration.sharedTier != nil, cache.isShareable(record),
                    let data = try await cache.requireDisk().data(forKey: record.bodyKey)
                {
                    await cache.shareBody([UInt8](data), bodyKey: record.bodyKey)
                }
            } else {
                try await cache.writeBody(outcome.buffer, for: record)
            }
            cache.levels.followStoreChanges()  // another handle's removal is an invalidation
            let added = try await cache.invalidations.commit(uri: key.uri, tags: order.tags, startedAt: order.startedAt)
            {
                try await cache.addVariant(record, for: key)
            }
            guard added == true else {
                // Overtaken by an invalidation, or older than the variant stored meanwhile: the
                // body goes with the record it was written for.
                try await cache.removeBody(record.bodyKey)
                complete(stored: false)
                return false
            }
            complete(stored: true)
            return true
        } catch {
            cache.configuration.logger.warning("could not store a response: \(error)", metadata: ["uri": "\(key.uri)"])
            complete(stored: false)
            return false
        }
    }

    /// The body failed or was dropped: store nothing.
    func abandon() {
        let write = state.withLock { state -> DiskCache.StreamingWrite? in
            state.failed = true
            return state.write
        }
        write?.cancel()
        complete(stored: false)
    }

    private func complete(stored: Bool) {
        let first = state.withLock { state -> Bool in
            defer { state.done = true }
            return !state.done
        }
        if first { onDone(stored) }
    }

    /// `body` passed through unchanged, recorded as it is read.
    func tee(_ body: HTTPBody) -> HTTPBody {
        let box = TeeIterator(body: body, recorder: self, replacement: nil)
        return HTTPBody(length: body.length) { { try await box.next() } }
    }

    /// `body` passed through unchanged; `replacement` (the will-cache hook's bytes) is stored
    /// once `body` has ended, and nothing if it fails or is dropped: RFC 9111 §3.3 keeps an
    /// incomplete response out of the cache, as NSURLSession asks its delegate's
    /// `willCacheResponse` only once the data has all arrived.
    func tee(_ body: HTTPBody, storingOnCompletion replacement: [UInt8]) -> HTTPBody {
        let box = TeeIterator(body: body, recorder: self, replacement: replacement)
        return HTTPBody(length: body.length) { { try await box.next() } }
    }
}

/// Iterates the origin's body for one reader, feeding the recorder.
///
/// A body of declared length (`Content-Length`, RFC 9112 §6.3) is complete with its last
/// declared byte, and a framed message's end comes with that byte: the iterator then looks one
/// chunk ahead and, finding the end, stores the response before it hands the last chunk over.
/// A client that has read the whole body and asks again finds it stored, as nginx's cache file
/// is in place when the upstream's last byte has been read; without the look-ahead the store
/// committed only on the reader's next call, after the client had everything (a proxy's second
/// request then missed). A body that goes on past its declared length (a fetch that miscounted)
/// keeps the chunk looked at for the next call and is stored at its real end, as before; one
/// that ends short of it is passed on as it came and not stored.
private final class TeeIterator: @unchecked Sendable {
    // Iterated by one task only (HTTPBody is single-pass); the lock-free state is safe there.
    private var iterator: HTTPBody.AsyncIterator
    private let recorder: BodyRecorder
    /// Stored instead of the chunks, once they have all passed.
    private let replacement: [UInt8]?
    /// The body's declared length, when it has one.
    private let declaredLength: Int64?
    /// Bytes handed to the reader so far.
    private var passed: Int64 = 0
    /// The chunk read by looking ahead past the declared length, handed over next.
    private var lookedAhead: [UInt8]?
    /// What looking ahead threw, thrown on the next call (the chunk before it is handed over).
    private var lookAheadError: (any Error)?
    /// The end was found by looking ahead and the response stored: the next call ends the body.
    private var ended = false

    init(body: HTTPBody, recorder: BodyRecorder, replacement: [UInt8]?) {
        iterator = body.makeAsyncIterator()
        self.recorder = recorder
        self.replacement = replacement
        declaredLength = body.length
    }

    func next() async throws -> [UInt8]? {
        if let error = lookAheadError {
            lookAheadError = nil
            throw error
        }
        if ended { return nil }
        do {
            let chunk: [UInt8]
            if let pending = lookedAhead {
                lookedAhead = nil
                chunk = pending
            } else {
                guard let next = try await iterator.next() else {
                    // Ended before its declared length: an incomplete message (RFC 9112 §8),
                    // which RFC 9111 §3.3 keeps from being stored as a complete response (as
                    // nginx discards an upstream response cut short of its Content-Length).
                    if let declaredLength, passed < declaredLength {
                        recorder.abandon()
                    } else {
                        await end()
                    }
                    return nil
                }
                chunk = next
            }
            if replacement == nil { await recorder.append(chunk) }
            passed += Int64(chunk.count)
            if passed == declaredLength { await lookAhead() }
            return chunk
        } catch {
            recorder.abandon()
            throw error
        }
    }

    /// At the declared length: ends and stores the body when the origin's end is there; keeps
    /// a chunk past it (or an error) for the next call.
    private func lookAhead() async {
        do {
            if let more = try await iterator.next() {
                lookedAhead = more
            } else {
                await end()
                ended = true
            }
        } catch {
            recorder.abandon()
            lookAheadError = error
        }
    }

    /// The origin's body ended whole: store it (or the replacement).
    private func end() async {
        if let replacement { await recorder.append(replacement) }
        await recorder.finish()
    }
}

extension HTTPCache {
    /// Writes a complete body held in memory to its tier(s).
    func writeBody(_ bytes: [UInt8], for record: VariantRecord) async throws {
        let bodyKey = record.bodyKey
        if Int64(bytes.count) <= memoryBodyLimit {
            let entry = MemoryEntry.body(bytes)
            try await levels.write(entry, forKey: bodyKey, cost: entry.charge(forKey: bodyKey)) {
                if !record.isMemoryOnly { try await requireDisk().setData(Data(bytes), forKey: bodyKey) }
            }
        } else if record.isMemoryOnly {
            throw StowageError.bodyTooLarge(limit: Int(memoryBodyLimit))
        } else {
            try await requireDisk().setData(Data(bytes), forKey: bodyKey)
        }
        if !record.isMemoryOnly { await shareBody(bytes, bodyKey: bodyKey) }
    }
}
