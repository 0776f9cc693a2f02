import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore

// Loading, storing and removing records and bodies. Keys in the disk cache: `m <uri>` for the
// variant records of a URI, `b <random>` for each body (a new key per stored body, so a reader
// of the old body is never confused by a new one).

extension HTTPCache {
    static func recordKey(_ key: CacheKey) -> String { "m " + key.uri }

    /// The disk tier, for code that runs only for responses stored on disk.
    ///
    /// - Throws: `StowageError` `.invalidConfiguration` without one (a memory-only or disabled
    ///   cache keeps every record in memory only, so this is not reached).
    func requireDisk() throws -> DiskCache {
        guard let disk else {
            throw StowageError(
                code: .invalidConfiguration,
                message: "this HTTP cache has no disk tier (\(mode)); give it a directory and a diskCapacity above 0"
            )
        }
        return disk
    }

    /// The stored variants of `key`: memory, disk, the shared level, through the levels'
    /// read-through sequence (``RecordsReading``).
    func variants(for key: CacheKey) async throws -> [VariantRecord] {
        if mode == .disabled { return [] }
        return try await levels.read(Self.recordKey(key), through: RecordsReading(cache: self)) ?? []
    }

    /// The most recent variant that `request` selects (§4.1; §4 "the most recent").
    ///
    /// Of variants received at the same time, the first in `records`. One pass over indices: a
    /// filtered array would copy every matching record on every lookup.
    func selectVariant(_ request: HTTPRequest, in records: [VariantRecord]) -> VariantRecord? {
        var selected: Int?
        for index in records.indices
        where rules.varyMatches(request, varyingFields: records[index].stored.varyingFields) {
            if let best = selected, !(records[best].stored.responseSeconds < records[index].stored.responseSeconds) {
                continue
            }
            selected = index
        }
        return selected.map { records[$0] }
    }

    /// Writes the variant list of `key` (memory and, for non-memory-only records, disk).
    ///
    /// One write for this node's shared fills (``CacheLevels/writingEverywhere(_:_:)``): a read of
    /// the URL that found the older list in the shared level keeps nothing over this one.
    func writeVariants(_ records: [VariantRecord], for key: CacheKey) async throws {
        let recordKey = Self.recordKey(key)
        try await levels.writingEverywhere(recordKey) {
            if records.isEmpty {
                try await levels.remove(recordKey)
                await shareVariants([], recordKey: recordKey)
                return
            }
            let durable = records.filter { !$0.isMemoryOnly }
            let entry = MemoryEntry.variants(records)
            try await levels.write(entry, forKey: recordKey, cost: entry.charge(forKey: recordKey)) {
                if durable.isEmpty {
                    try await disk?.removeData(forKey: recordKey)
                } else {
                    try await requireDisk().setData(Data(VariantRecord.encode(durable)), forKey: recordKey)
                }
            }
            await shareVariants(records, recordKey: recordKey)
        }
    }

    /// Adds (or replaces the one with the same `Vary` values) a variant of `key`, removing
    /// the replaced variant's body, and the oldest variants beyond
    /// ``Configuration/maximumVariantsPerURL`` with theirs.
    ///
    /// - Returns: `false`, storing nothing, when the variant it would replace answers a request
    ///   sent after `record`'s: of two responses, the one to the later request is the more recent
    ///   (RFC 9111 §4.2.3 `request_time`), whatever order they arrive in.
    @discardableResult
    func addVariant(_ record: VariantRecord, for key: CacheKey) async throws -> Bool {
        var records = try await variants(for: key)
        var replaced = records.filter { $0.stored.varyingFields == record.stored.varyingFields }
        if replaced.contains(where: { $0.stored.requestSeconds > record.stored.requestSeconds }) { return false }
        records.removeAll { $0.stored.varyingFields == record.stored.varyingFields }
        records.append(record)
        // Appended in order of storing: the first are the oldest.
        let excess = records.count - configuration.maximumVariantsPerURL
        if excess > 0 {
            replaced += records.prefix(excess)
            records.removeFirst(excess)
        }
        try await writeVariants(records, for: key)
        for old in replaced where old.bodyKey != record.bodyKey { try await removeBody(old.bodyKey) }
        return true
    }

    /// Removes every variant of `key` and their bodies, from the shared level too unless
    /// `fromSharedLevel` is `false` (the other nodes then keep theirs).
    func remove(_ key: CacheKey, fromSharedLevel: Bool = true) async throws {
        let records = try await variants(for: key)
        guard fromSharedLevel else {
            try await levels.remove(Self.recordKey(key))
            for record in records { try await levels.remove(record.bodyKey) }
            return
        }
        // One removal for this node's shared fills: a read of the URL meanwhile keeps nothing it
        // finds in the shared level before these removals reach it.
        try await levels.removingEverywhere {
            try await writeVariants([], for: key)
            for record in records { try await removeBody(record.bodyKey) }
        }
    }

    func removeBody(_ bodyKey: String) async throws {
        try await levels.remove(bodyKey)
        await unshareBody(bodyKey)
    }

    static func makeBodyKey() -> String {
        "b " + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            + String(UInt64.random(in: 0...UInt64.max), radix: 16)
    }

    /// Bodies up to this size are read whole from their file, in one hop and one buffer (then
    /// kept in memory when small enough); larger ones stream in pieces of this size.
    static let storedBodyReadLimit = 1 << 20

    /// The body of `record`: from memory, from the index or its file whole, or streamed from its
    /// file, or from the shared level, through the levels' read-through sequence (``BodyReading``).
    /// `nil` when it is gone (evicted separately from its record).
    func body(of record: VariantRecord) async throws -> HTTPBody? {
        try await levels.read(record.bodyKey, through: BodyReading(cache: self, record: record))
    }

    /// Replaces the stored fields of the variants a 304 selects (§4.3.4); returns the updated
    /// records.
    func freshenVariants(
        for key: CacheKey,
        with notModified: HTTPResponse,
        requestTime: Double,
        responseTime: Double
    ) async throws -> [VariantRecord] {
        var records = try await variants(for: key)
        let indices = rules.responsesToFreshen(records.map(\.stored), with: notModified, nowSeconds: responseTime)
        guard !indices.isEmpty else { return [] }
        for index in indices {
            records[index].stored = rules.freshen(
                records[index].stored,
                with: notModified,
                requestTime: requestTime,
                responseTime: responseTime
            )
        }
        try await writeVariants(records, for: key)
        return indices.map { records[$0] }
    }

    /// §4.4: removes what an unsafe request invalidates.
    public func invalidate(after request: HTTPRequest, response: HTTPResponse) async throws {
        for key in rules.invalidatedKeys(request: request, response: response) {
            await invalidations.begin(.uri(key.uri))
            try await remove(key)
        }
    }
}
