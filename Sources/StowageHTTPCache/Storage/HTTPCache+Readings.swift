import Foundation
import StowageCache
import StowageCore

// How the HTTP cache's two kinds of entry go through the levels' one read-through sequence
// (`CacheLevels.read(_:through:)`, which confirms, fills and keeps them as it does a
// `HybridCache`'s values): the variant records of a URL, and a body.

extension HTTPCache {
    /// The variant records of a URL (key `m <uri>`): costed in memory by the heap they hold, a
    /// disk copy confirmed against the shared level when it may have missed an invalidation (a
    /// variant too large to share is lost this way, once), a shared copy kept on disk without a
    /// lifetime of its own (freshness is the records', as for the node's own writes).
    struct RecordsReading: LevelReading {
        let cache: HTTPCache

        func found(inMemory entry: MemoryEntry) -> [VariantRecord]? {
            guard case .variants(let records) = entry else { return nil }
            return records
        }

        func decode(_ data: Data, forKey key: String) throws -> (found: [VariantRecord], entry: MemoryEntry) {
            let records = try VariantRecord.decode(data)
            return (records, .variants(records))
        }

        /// The heap the decoded records hold (`MemoryEntry.charge(forKey:)`), not their encoded size.
        func memoryCost(of entry: MemoryEntry, byteCount: Int, forKey key: String) -> Int? {
            entry.charge(forKey: key)
        }

        func localLifetime(of entry: SharedCacheEntry) -> Duration? { nil }

        func writeToDisk(_ data: Data, forKey key: String, timeToLive: Duration?) async throws {
            try await cache.requireDisk().setData(data, forKey: key)
        }
    }

    /// The body of `record` (key `b <random>`): kept in memory up to the memory level's entry
    /// limit; read whole from disk up to ``storedBodyReadLimit`` and streamed from its file above;
    /// never confirmed (a new body gets a new key, so no invalidation makes a body stale: its
    /// record, which is confirmed, is what goes); bytes of another length than the record gives
    /// are not its body (truncated, or another value under the key) and read as a miss, since
    /// serving them would frame the response wrongly.
    struct BodyReading: LevelReading {
        let cache: HTTPCache
        let record: VariantRecord

        func found(inMemory entry: MemoryEntry) -> HTTPBody? {
            guard case .body(let bytes) = entry else { return nil }
            return HTTPBody(bytes: bytes)
        }

        /// A memory-only response's body was never written below memory.
        var readsBelowMemory: Bool { !record.isMemoryOnly }

        var wholeReadLimit: Int64 { Int64(HTTPCache.storedBodyReadLimit) }

        var confirmsDiskCopies: Bool { false }

        func decode(_ data: Data, forKey key: String) throws -> (found: HTTPBody, entry: MemoryEntry) {
            if let length = record.stored.bodyLength, Int64(data.count) != length {
                throw StowageError(
                    code: .corrupt,
                    message: "the HTTP cache body '\(key)' is \(data.count) bytes where its record says \(length); "
                        + "it is not that response's body and reads as a miss"
                )
            }
            let bytes = [UInt8](data)
            return (HTTPBody(bytes: bytes), .body(bytes))
        }

        func memoryCost(of entry: MemoryEntry, byteCount: Int, forKey key: String) -> Int? {
            Int64(byteCount) <= cache.memoryBodyLimit ? entry.charge(forKey: key) : nil
        }

        func streamed(_ reader: DiskCache.FileReader) -> HTTPBody? {
            HTTPBody(length: reader.size) {
                { () async throws -> [UInt8]? in
                    let chunk = try await BlockingWork.run { try reader.read(upTo: HTTPCache.storedBodyReadLimit) }
                    return chunk.isEmpty ? nil : chunk
                }
            }
        }

        func localLifetime(of entry: SharedCacheEntry) -> Duration? { nil }

        func writeToDisk(_ data: Data, forKey key: String, timeToLive: Duration?) async throws {
            try await cache.requireDisk().setData(data, forKey: key)
        }
    }
}
