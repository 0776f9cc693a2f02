/// Whether a key falls under a ban's prefix, in one sense for every level: its UTF-8 bytes start
/// with the prefix's. That is how the disk level's index finds them (a `BINARY` range of its
/// `TEXT` keys, `DiskCache.keys(withPrefix:)`), how a Redis `SCAN MATCH` or another node sees
/// them, and how memory, the outage queue (``PendingSharedWrites``) and the HTTP cache's
/// invalidation order must see them too. `String.hasPrefix` compares characters by canonical
/// equivalence instead: `"\u{E9}x".hasPrefix("e\u{301}")` and `"\u{212A}".hasPrefix("K")` hold
/// though no byte range holds both, so a ban applied with it dropped a key from memory and left
/// its disk copy to be read back.
package enum KeyPrefix {
    /// Whether the UTF-8 bytes of `key` start with those of `prefix`.
    @inlinable
    package static func covers(_ key: String, under prefix: String) -> Bool {
        key.utf8.starts(with: prefix.utf8)
    }
}

/// A set of key prefixes that answers "does any of them cover this key?" (``KeyPrefix``) in one
/// pass over the key's bytes, whatever their number: the prefixes are found by the FNV-1a hash
/// of their bytes, looked up only at the lengths some prefix has. With 10,000 bans waiting, the
/// check every shared read makes (``PendingSharedWrites/change(forKey:)``) tried each prefix in
/// turn, about a millisecond a read.
package struct KeyPrefixSet: Sendable {
    /// The prefixes by the hash of their bytes (a collision keeps both).
    private var byHash: [UInt64: [String]] = [:]
    /// How many prefixes have each byte length (index); trailing zeros trimmed.
    private var lengths: [Int] = []

    package init() {}

    package var isEmpty: Bool { lengths.isEmpty }

    /// Adds `prefix`; returns whether it was new.
    @discardableResult
    package mutating func insert(_ prefix: String) -> Bool {
        let hash = Self.hash(prefix.utf8)
        if byHash[hash]?.contains(where: { $0.utf8.elementsEqual(prefix.utf8) }) == true { return false }
        byHash[hash, default: []].append(prefix)
        let length = prefix.utf8.count
        if lengths.count <= length { lengths.append(contentsOf: repeatElement(0, count: length + 1 - lengths.count)) }
        lengths[length] += 1
        return true
    }

    /// Removes `prefix`; returns whether it was there.
    @discardableResult
    package mutating func remove(_ prefix: String) -> Bool {
        let hash = Self.hash(prefix.utf8)
        guard var bucket = byHash[hash], let index = bucket.firstIndex(where: { $0.utf8.elementsEqual(prefix.utf8) })
        else { return false }
        bucket.remove(at: index)
        byHash[hash] = bucket.isEmpty ? nil : bucket
        lengths[prefix.utf8.count] -= 1
        while lengths.last == 0 { lengths.removeLast() }
        return true
    }

    /// Whether some prefix in the set covers `key` (``KeyPrefix/covers(_:under:)``).
    package func covers(_ key: String) -> Bool {
        guard !lengths.isEmpty else { return false }
        var hash = Self.offsetBasis
        if lengths[0] > 0, matches(key, hash: hash, length: 0) { return true }
        var length = 0
        for byte in key.utf8 {
            length += 1
            guard length < lengths.count else { return false }
            hash = (hash ^ UInt64(byte)) &* Self.prime
            if lengths[length] > 0, matches(key, hash: hash, length: length) { return true }
        }
        return false
    }

    private func matches(_ key: String, hash: UInt64, length: Int) -> Bool {
        byHash[hash]?.contains { $0.utf8.count == length && key.utf8.starts(with: $0.utf8) } ?? false
    }

    // FNV-1a, 64-bit (Fowler, Noll, Vo): a running hash, so every prefix of the key costs one step.
    private static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    private static let prime: UInt64 = 0x0000_0100_0000_01b3

    private static func hash(_ bytes: String.UTF8View) -> UInt64 {
        bytes.reduce(offsetBasis) { ($0 ^ UInt64($1)) &* prime }
    }
}
