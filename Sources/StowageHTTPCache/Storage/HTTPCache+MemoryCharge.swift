import HTTPTypes
import StowageCache
import StowageCore

// What each entry of the memory level is charged against `memoryCapacity`: the heap it holds
// (``HeapBytes``), its key and its slot in the memory level, so that the bytes the level counts
// are the bytes the process holds for it (issue 45: "a cache stays within the memory it was
// given"). Before, records were charged their encoded size (about 330 bytes for a response from
// nginx, whose decoded form holds about 1.4 KB) and a proxy's 16 MB of charges held about twice
// that (a heap profile under `Benchmarks/proxy-rss.sh`; Benchmarks/README.md, "Proxy memory").

extension HTTPCache.MemoryEntry {
    /// What the entry under `key` costs the memory level: its own heap, the heap of its key, and
    /// the level's bytes for one entry (``slotBytes``).
    func charge(forKey key: String) -> Int {
        let own: Int
        switch self {
        case .variants(let records): own = VariantRecord.heapBytes(of: records)
        case .body(let bytes): own = HeapBytes.buffer(bytes)
        case .prepared(let answer): own = answer.cost
        case .spilled: own = SpilledAnswer.cost
        }
        return own + HeapBytes.string(key) + Self.slotBytes
    }

    /// The memory level's own bytes per entry (`MemoryCache.Storage`): the key, the value and
    /// the recency links in its slot buffers, which grow by doubling (so up to twice the live
    /// slots), and the key's place in its index (a `Dictionary` kept at most 3/4 full, which
    /// also grows by doubling).
    static let slotBytes =
        2 * (MemoryLayout<String>.stride + MemoryLayout<Self>.stride + 24)
        + 2 * (4 * (MemoryLayout<String>.stride + MemoryLayout<Int32>.stride) / 3 + 1)
}

extension VariantRecord {
    /// The heap `records` hold in memory: the array and what each record points at.
    static func heapBytes(of records: [VariantRecord]) -> Int {
        records.reduce(HeapBytes.buffer(records)) { $0 + $1.heapBytes }
    }

    /// What this record points at on the heap (its own fields are in its array's buffer): the
    /// response's fields, the parsed `Cache-Control`, the body key, the varying fields and the
    /// user info.
    var heapBytes: Int {
        var bytes = HeapBytes.fields(stored.response.headerFields)
        bytes += HeapBytes.string(stored.response.status.reasonPhrase) + HeapBytes.string(bodyKey)
        let directives = stored.facts.cacheControl.directives
        bytes += HeapBytes.buffer(directives)
        for directive in directives {
            bytes += HeapBytes.string(directive.name) + HeapBytes.string(directive.argument)
        }
        bytes += HeapBytes.string(stored.facts.entityTag?.opaqueTag)
        bytes += HeapBytes.buffer(stored.varyingFields)
        for field in stored.varyingFields {
            bytes += HeapBytes.string(field.name) + HeapBytes.string(field.value)
        }
        bytes += HeapBytes.dictionary(stored.userInfo)
        return bytes
    }
}

extension HTTPCache {
    /// Sets aside `bytes` of `memoryCapacity` for the working memory of the cache's owner (a
    /// server's requests in flight), evicting from the memory level until what it keeps fits in
    /// the rest; replaces the amount set aside before, and is held to at most half the capacity,
    /// so the level always keeps the other half. Redis counts its clients' buffers against
    /// `maxmemory` the same way.
    ///
    /// - Parameter bytes: The working memory to set aside, `0` or more.
    package func setAsideMemory(_ bytes: Int) {
        precondition(bytes >= 0, "an HTTPCache cannot set aside \(bytes) bytes of memory: it must be >= 0")
        guard configuration.memoryCapacity.rawValue > 0 else { return }
        memory.setAside(cost: min(bytes, Self.mostSetAside(of: configuration.memoryCapacity)))
    }

    /// The memory set aside with ``setAsideMemory(_:)``; `0` when none is.
    package var memorySetAside: ByteCount { ByteCount(memory.costSetAside) }

    /// The most ``setAsideMemory(_:)`` takes of `capacity`: half of it.
    package static func mostSetAside(of capacity: ByteCount) -> Int { Int(capacity.rawValue / 2) }
}
