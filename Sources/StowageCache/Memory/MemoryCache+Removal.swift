extension MemoryCache {
    /// An entry that left the storage, carried out of the lock to be reported and released.
    @usableFromInline
    struct Removal {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        @usableFromInline var reason: EvictionReason
        /// The entry's cost, for the bytes-evicted counter.
        @usableFromInline var cost: Int

        @inlinable
        init(key: Key, value: Value, reason: EvictionReason, cost: Int) {
            self.key = key
            self.value = value
            self.reason = reason
            self.cost = cost
        }
    }

    /// The entries one write evicted. The first is stored inline, so a full cache evicting one
    /// entry per write allocates nothing.
    @usableFromInline
    struct Removals {
        @usableFromInline var first: Removal?
        @usableFromInline var rest: [Removal]

        @inlinable
        init() {
            first = nil
            rest = []
        }

        @inlinable
        mutating func append(_ removal: Removal) {
            if first == nil { first = removal } else { rest.append(removal) }
        }
    }

    /// What a lookup found.
    @usableFromInline
    enum Lookup {
        /// The value and its cost.
        case hit(Value, cost: Int)
        case miss
        /// The entry had expired and was removed.
        case expired(Removal)
    }

    /// What a write displaced: the key's previous entry and the entries evicted for the limits.
    @usableFromInline
    struct Insertion {
        @usableFromInline var replaced: Removal?
        @usableFromInline var evictions: Removals

        @inlinable
        init() {
            replaced = nil
            evictions = Removals()
        }
    }
}
