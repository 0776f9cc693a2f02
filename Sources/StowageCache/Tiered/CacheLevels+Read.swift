import Foundation
import Logging
import Tracing

// The read-through sequence, once for every cache on the levels (`HybridCache`'s values, the HTTP
// cache's records and bodies): memory, then disk, then the shared level; a disk copy that may have
// missed an invalidation is confirmed against the shared level first; what is found below memory
// is kept in the levels above unless a change of the key overtook the read (the checks are
// `keepInMemory(_:forKey:cost:readAt:)`'s and `readShared(_:fill:)`'s). A `LevelReading` says only
// what differs between the kinds of value.

extension CacheLevels {
    /// The value of `key` from memory, else from the levels below it (``readBelowMemory(_:through:)``).
    ///
    /// - Throws: What the disk level throws, or `reading`'s refused memory cost for a disk copy;
    ///   never a shared-level failure, which reads as a miss.
    package func read<Reading: LevelReading>(
        _ key: String,
        through reading: Reading
    ) async throws -> Reading.Found? where Reading.Entry == Value {
        followStoreChanges()
        if let entry = memory.value(forKey: key), let found = reading.found(inMemory: entry) { return found }
        return try await readBelowMemory(key, through: reading)
    }

    /// The rest of ``read(_:through:)`` after a memory miss, for a cache that looked in memory
    /// itself (`HybridCache.value(forKey:)`, inlined so that its hit runs specialized): disk
    /// (confirmed against the shared level when the copy may have missed an invalidation), else
    /// the shared level; what is found is kept in the levels above.
    ///
    /// Traced (``CacheTracing/SpanName/get``, with the disk and shared reads under it); the
    /// memory hit before it is not.
    package func readBelowMemory<Reading: LevelReading>(
        _ key: String,
        through reading: Reading
    ) async throws -> Reading.Found? where Reading.Entry == Value {
        guard reading.readsBelowMemory, let disk else { return nil }
        let tracer = activeTracer
        return try await tracer.withSpanIfTracing(CacheTracing.SpanName.get) { span in
            span.recordCacheKey(key, cacheName: disk.configuration.name)
            let found = try await readBelowMemory(key, through: reading, disk: disk, tracer: tracer, span: span)
            if span.isRecording { span.attributes[CacheTracing.Attribute.hit] = found != nil }
            return found
        }
    }

    /// ``readBelowMemory(_:through:)`` inside its span: notes in `span` the level that answered.
    private func readBelowMemory<Reading: LevelReading>(
        _ key: String,
        through reading: Reading,
        disk: DiskCache,
        tracer: any Tracer,
        span: any Span
    ) async throws -> Reading.Found? where Reading.Entry == Value {
        // Marked before the disk read: a change that lands after it keeps this read's copy out of memory.
        let mark = beginRead()
        let opened = try await tracer.withSpanIfTracing(CacheTracing.SpanName.diskRead) { diskSpan in
            diskSpan.recordCacheKey(key, cacheName: disk.configuration.name)
            let opened = try await disk.openStoredValue(forKey: key, readingWholeUpTo: reading.wholeReadLimit)
            if diskSpan.isRecording {
                diskSpan.attributes[CacheTracing.Attribute.hit] = opened != nil
                if let opened { diskSpan.attributes[CacheTracing.Attribute.bytes] = opened.byteCount }
            }
            return opened
        }
        let stored: DiskCache.StoredData
        switch opened {
        case nil:
            // Another node stored it: a local copy is kept (not published again).
            guard
                case .found(let found) = await readShared(
                    key,
                    fill: { await keepShared($0, forKey: key, reading, fillBegunAt: $1) }
                )
            else { return nil }
            if span.isRecording { span.attributes[CacheTracing.Attribute.level] = CacheTracing.Level.shared }
            return found
        case .file(let reader):
            if span.isRecording { span.attributes[CacheTracing.Attribute.level] = CacheTracing.Level.disk }
            return reading.streamed(reader)
        case .whole(let whole):
            stored = whole
        }
        if span.isRecording { span.attributes[CacheTracing.Attribute.level] = CacheTracing.Level.disk }
        // A copy stored before the horizon (an earlier run, or before the invalidation channel
        // broke) may have missed an invalidation: the shared copy replaces it, or, when there is
        // none, it goes.
        if reading.confirmsDiskCopies,
            let confirmed = await confirmDiskCopy(
                key,
                storedAt: stored.modified,
                fill: { await keepShared($0, forKey: key, reading, fillBegunAt: $1) }
            )
        {
            switch confirmed {
            case .found(let found):
                if span.isRecording { span.attributes[CacheTracing.Attribute.level] = CacheTracing.Level.shared }
                return found
            case .absent: return nil
            case .unreachable: break  // served unchecked, as in any outage
            }
        }
        guard
            let decoded = decode(
                stored.data,
                forKey: key,
                reading,
                failing: "cached bytes no longer decode; removing them"
            )
        else {
            // Through the levels, so that a read that found these bytes does not keep them either.
            try await removeFromDisk(key)
            return nil
        }
        if let cost = try reading.memoryCost(of: decoded.entry, byteCount: stored.data.count, forKey: key) {
            // Unless a change begun since the disk read made this copy old or removed it.
            keepInMemory(decoded.entry, forKey: key, cost: cost, readAt: mark)
        }
        return decoded.found
    }

    /// `key` from the shared level alone, kept on disk and in memory on a hit (as a read below
    /// memory keeps it): a node waiting for another node's load polls this.
    package func readShared<Reading: LevelReading>(
        _ key: String,
        through reading: Reading
    ) async -> Reading.Found? where Reading.Entry == Value {
        guard
            case .found(let found) = await readShared(
                key,
                fill: { await keepShared($0, forKey: key, reading, fillBegunAt: $1) }
            )
        else { return nil }
        return found
    }

    /// Decodes a shared entry and keeps it on disk and in memory, through ``write(_:forKey:cost:timeToLive:keepsInMemory:fillBegunAt:toDisk:)``;
    /// bytes this node cannot decode (another node's newer format) are left alone and read as a
    /// miss (`nil`). A failed local write is logged: the value was current when read, so it is
    /// still returned.
    private func keepShared<Reading: LevelReading>(
        _ entry: SharedCacheEntry,
        forKey key: String,
        _ reading: Reading,
        fillBegunAt begun: SharedWriteStripes.Stamp
    ) async -> Reading.Found? where Reading.Entry == Value {
        guard
            let decoded = decode(
                entry.data,
                forKey: key,
                reading,
                failing: "shared bytes do not decode; reading a miss"
            )
        else { return nil }
        do {
            let cost = try reading.memoryCost(of: decoded.entry, byteCount: entry.data.count, forKey: key)
            let lifetime = reading.localLifetime(of: entry)
            try await self.write(
                decoded.entry,
                forKey: key,
                cost: cost ?? 0,
                timeToLive: lifetime,
                keepsInMemory: cost != nil,
                fillBegunAt: begun
            ) {
                try await reading.writeToDisk(entry.data, forKey: key, timeToLive: lifetime)
            }
        } catch {
            logger.warning("could not keep a shared copy", metadata: ["key": "\(key)", "error": "\(error)"])
        }
        return decoded.found
    }

    /// `reading`'s decoding of `data` (from disk or the shared level), or `nil`, logged with
    /// `failure`, when the bytes are not a value of its kind.
    private func decode<Reading: LevelReading>(
        _ data: Data,
        forKey key: String,
        _ reading: Reading,
        failing failure: Logger.Message
    ) -> (found: Reading.Found, entry: Value)? where Reading.Entry == Value {
        do {
            return try reading.decode(data, forKey: key)
        } catch {
            logger.warning(failure, metadata: ["key": "\(key)", "error": "\(error)"])
            return nil
        }
    }
}
