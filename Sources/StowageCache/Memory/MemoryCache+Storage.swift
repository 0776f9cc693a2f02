extension MemoryCache {
    /// One slot of a ``Storage``: a key, its value and its place in recency order.
    @usableFromInline
    struct Entry {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        /// The more recently used neighbour, `-1` at the head.
        @usableFromInline var previous: Int32
        /// The less recently used neighbour, `-1` at the tail.
        @usableFromInline var next: Int32

        @inlinable
        init(key: Key, value: Value, previous: Int32, next: Int32) {
            self.key = key
            self.value = value
            self.previous = previous
            self.next = next
        }
    }

    /// The entries of a ``MemoryCache`` in recency order: one buffer of slots (key, value and
    /// the two links of an intrusive doubly linked list), found through a hash table of slot
    /// numbers.
    ///
    /// Every operation the cache makes on its hot path (lookup, insert, replace, evicting the
    /// least recently used entry) is O(1) and allocates nothing once the buffers have grown:
    /// freed slots are reused, and no entry is a class instance.
    ///
    /// The table is the "indices" half of a compact dictionary (CPython's `dict` since 3.6,
    /// swift-collections' `OrderedDictionary`): open addressing with linear probing over 4-byte
    /// slot numbers, deletions by backward shift (no tombstones), at most 3/4 full, so 10^7 entries
    /// cost 4 bytes × 2^24 buckets beside the slots instead of a `Dictionary<Key, Int32>`'s 12
    /// (scale.memory-cache in the bench: within 2x a `[Key: Value]`'s bytes per entry). A slot's
    /// key is its one copy; a probe compares it in place.
    ///
    /// Costs and expiries live in buffers of their own, allocated the first time an entry has
    /// a cost other than zero or a finite expiry: a cache that uses neither keeps 8 bytes of
    /// bookkeeping per slot, its two links.
    ///
    /// Slots `0..<used` hold a live entry or are in ``free`` (their key and value
    /// uninitialized). The buffers grow only when ``free`` is empty, so growing moves `used`
    /// live slots.
    ///
    /// Noncopyable, so it owns its buffers alone; it lives inside the cache's `Mutex`.
    @usableFromInline
    struct Storage: ~Copyable {
        @usableFromInline var entries: UnsafeMutablePointer<Entry>
        /// Slot numbers, `-1` for an empty bucket; a power of two of them.
        @usableFromInline var buckets: UnsafeMutablePointer<Int32>
        /// The number of buckets minus one.
        @usableFromInline var bucketMask: Int
        /// Slots allocated: 3/4 of the buckets, so a probe always ends at an empty bucket.
        @usableFromInline var capacity: Int
        @usableFromInline var used = 0
        /// Slots below ``used`` that hold no entry.
        @usableFromInline var free: [Int32] = []
        /// The number of live entries, expired ones included until they are noticed.
        @usableFromInline var count = 0
        /// Each slot's cost, `nil` while every entry stored had cost zero.
        @usableFromInline var costs: UnsafeMutablePointer<Int>?
        /// Each slot's expiry in seconds since the reference date (`.infinity` for none), `nil`
        /// while no entry stored had one.
        @usableFromInline var expiries: UnsafeMutablePointer<Double>?
        /// The most recently used slot, `-1` when empty.
        @usableFromInline var head: Int32 = -1
        /// The least recently used slot, `-1` when empty.
        @usableFromInline var tail: Int32 = -1
        /// The sum of the live entries' costs.
        @usableFromInline var totalCost = 0
        /// Most entries kept; `Int.max` for no limit.
        @usableFromInline let countLimit: Int
        /// Most total cost kept: ``MemoryCache/Configuration/costLimit`` less what the owner set
        /// aside (``MemoryCache/setAside(cost:)``); `Int.max` for no limit.
        @usableFromInline var costLimit: Int
        /// Advanced by every insertion and removal (``MemoryCache/contentVersion``).
        @usableFromInline let contentChanges: MemoryCacheContentChanges

        @usableFromInline
        init(countLimit: Int, costLimit: Int, contentChanges: MemoryCacheContentChanges) {
            self.countLimit = countLimit
            self.costLimit = costLimit
            self.contentChanges = contentChanges
            let bucketCount = 16
            buckets = .allocate(capacity: bucketCount)
            buckets.initialize(repeating: -1, count: bucketCount)
            bucketMask = bucketCount - 1
            capacity = bucketCount / 4 * 3
            entries = .allocate(capacity: capacity)
        }

        deinit {
            var slot = head
            while slot >= 0 {
                let next = entries[Int(slot)].next
                (entries + Int(slot)).deinitialize(count: 1)
                slot = next
            }
            entries.deallocate()
            buckets.deallocate()
            costs?.deallocate()
            expiries?.deallocate()
        }

        // MARK: Hot path

        /// The value for `key`, made most recently used; an expired entry is removed instead.
        ///
        /// - Parameter now: The time in seconds since the reference date; called only when the
        ///   entry has an expiry.
        @inlinable
        mutating func lookup(_ key: Key, now: () -> Double) -> Lookup {
            let (bucket, slot) = find(key)
            guard slot >= 0 else { return .miss }
            if let expiries {
                let expiry = expiries[Int(slot)]
                if expiry != .infinity, expiry <= now() {
                    erase(bucket: bucket)
                    return .expired(takeOut(slot, reason: .expired))
                }
            }
            moveToHead(slot)
            return .hit(entries[Int(slot)].value, cost: costs?[Int(slot)] ?? 0)
        }

        /// Stores `value` as the most recently used entry, then evicts least recently used
        /// entries while a limit is exceeded (possibly the new one, if its cost alone exceeds
        /// the cost limit).
        ///
        /// One probe of the table: a present key's slot takes the new entry in place (the old
        /// one leaves as ``Insertion/replaced``), a new key's goes in the empty bucket the probe
        /// ended at.
        ///
        /// - Parameter movesVersion: Whether storing it is a change of the contents
        ///   (``MemoryCache/contentVersion``); `false` for an entry kept beside them
        ///   (``MemoryCache/setUncountedValue(_:forKey:cost:)``). The evictions it causes are
        ///   changes either way.
        @inlinable
        mutating func insert(
            _ value: Value,
            forKey key: Key,
            cost: Int,
            expiry: Double,
            movesVersion: Bool = true
        ) -> Insertion {
            var insertion = Insertion()
            if movesVersion { contentChanges.advance() }
            // The running total must not pass Int.max (an overflow traps), even without a cost
            // limit: least recently used entries make room first, as a limit of Int.max would.
            while cost > Int.max - totalCost, tail >= 0 {
                insertion.evictions.append(evictTail(reason: .costLimit))
            }
            var (bucket, slot) = find(key)
            if slot >= 0 {
                let position = Int(slot)
                if movesVersion { contentChanges.advance() }
                unlink(slot)
                let oldCost = costs?[position] ?? 0
                totalCost -= oldCost
                let old = (entries + position).move()
                insertion.replaced = Removal(key: old.key, value: old.value, reason: .explicit, cost: oldCost)
            } else {
                if let reused = free.popLast() {
                    slot = reused
                } else {
                    if used == capacity {
                        grow()
                        bucket = find(key).bucket
                    }
                    slot = Int32(truncatingIfNeeded: used)
                    used += 1
                }
                buckets[bucket] = slot
                count += 1
            }
            let position = Int(slot)
            (entries + position).initialize(to: Entry(key: key, value: value, previous: -1, next: head))
            if head >= 0 { entries[Int(head)].previous = slot } else { tail = slot }
            head = slot
            setCost(cost, at: position)
            setExpiry(expiry, at: position)
            totalCost += cost
            if count > countLimit || totalCost > costLimit {
                evictOverLimits(into: &insertion.evictions)
            }
            return insertion
        }

        /// Removes the entry for `key`, if any.
        @inlinable
        mutating func remove(_ key: Key) -> Removal? {
            let (bucket, slot) = find(key)
            guard slot >= 0 else { return nil }
            erase(bucket: bucket)
            return takeOut(slot, reason: .explicit)
        }

        // MARK: Trimming

        /// Removes least recently used entries until at most `count` remain and their total
        /// cost is at most `cost`.
        mutating func trim(toCount count: Int, cost: Int, reason: EvictionReason) -> [Removal] {
            var removed: [Removal] = []
            while self.count > count || (totalCost > cost && tail >= 0) {
                removed.append(evictTail(reason: reason))
            }
            return removed
        }

        /// Removes every entry whose expiry is at or before `now`, in O(count).
        mutating func removeExpired(now: Double) -> [Removal] {
            guard let expiries else { return [] }
            var removed: [Removal] = []
            var slot = tail
            while slot >= 0 {
                let previous = entries[Int(slot)].previous
                if expiries[Int(slot)] <= now {
                    erase(bucket: bucket(of: slot))
                    removed.append(takeOut(slot, reason: .expired))
                }
                slot = previous
            }
            return removed
        }

        /// Removes every entry whose key satisfies `predicate`, in O(count).
        mutating func removeAll(where predicate: (Key) -> Bool) -> [Removal] {
            var removed: [Removal] = []
            var slot = tail
            while slot >= 0 {
                let previous = entries[Int(slot)].previous
                if predicate(entries[Int(slot)].key) {
                    erase(bucket: bucket(of: slot))
                    removed.append(takeOut(slot, reason: .explicit))
                }
                slot = previous
            }
            return removed
        }

        /// Calls `body` with every entry, least recently used first.
        func forEach(_ body: (Key, Value) -> Void) {
            var slot = tail
            while slot >= 0 {
                body(entries[Int(slot)].key, entries[Int(slot)].value)
                slot = entries[Int(slot)].previous
            }
        }

        /// What is inconsistent between the table, the list and the totals; empty when sound.
        /// O(count + buckets), for tests.
        func integrityViolations() -> [String] {
            var violations: [String] = []
            var seen = 0
            var cost = 0
            var previous: Int32 = -1
            var slot = head
            while slot >= 0, seen <= count {
                let entry = entries[Int(slot)]
                if entry.previous != previous { violations.append("slot \(slot) links back to \(entry.previous)") }
                if find(entry.key).slot != slot { violations.append("slot \(slot)'s key maps elsewhere") }
                seen += 1
                cost += costs?[Int(slot)] ?? 0
                previous = slot
                slot = entry.next
            }
            if tail != previous { violations.append("tail is \(tail), the list ends at \(previous)") }
            if seen != count { violations.append("\(seen) slots linked, \(count) keys") }
            if cost != totalCost { violations.append("costs sum to \(cost), totalCost is \(totalCost)") }
            let filled = (0...bucketMask).filter { buckets[$0] >= 0 }.count
            if filled != count { violations.append("\(filled) buckets filled, \(count) keys") }
            if used - free.count != count { violations.append("\(used) slots used, \(free.count) free, \(count) keys") }
            return violations
        }

        // MARK: Table

        /// The bucket holding `key`'s slot and the slot, or the empty bucket where the key would
        /// go and `-1`.
        @inlinable
        func find(_ key: Key) -> (bucket: Int, slot: Int32) {
            var bucket = key.hashValue & bucketMask
            while true {
                let slot = buckets[bucket]
                if slot < 0 || entries[Int(slot)].key == key { return (bucket, slot) }
                bucket = (bucket &+ 1) & bucketMask
            }
        }

        /// The bucket holding `slot`, whose entry is live.
        @inlinable
        func bucket(of slot: Int32) -> Int {
            var bucket = entries[Int(slot)].key.hashValue & bucketMask
            while buckets[bucket] != slot { bucket = (bucket &+ 1) & bucketMask }
            return bucket
        }

        /// Empties `bucket` and moves later entries of its probe run back into the hole where
        /// their own probe allows it (backward-shift deletion), so that no lookup ever passes an
        /// empty bucket before its key. Reads the keys of the run after it, not the erased one.
        @inlinable
        mutating func erase(bucket: Int) {
            var hole = bucket
            var next = (bucket &+ 1) & bucketMask
            while true {
                let slot = buckets[next]
                if slot < 0 { break }
                let ideal = entries[Int(slot)].key.hashValue & bucketMask
                // The entry may fill the hole if the hole lies between its ideal bucket and
                // where it is, i.e. it has probed at least as far as the hole is behind it.
                if (next &- ideal) & bucketMask >= (next &- hole) & bucketMask {
                    buckets[hole] = slot
                    hole = next
                }
                next = (next &+ 1) & bucketMask
            }
            buckets[hole] = -1
        }

        // MARK: List and slots

        @inlinable
        mutating func evictOverLimits(into evictions: inout Removals) {
            while count > countLimit {
                evictions.append(evictTail(reason: .countLimit))
            }
            while totalCost > costLimit, tail >= 0 {
                evictions.append(evictTail(reason: .costLimit))
            }
        }

        @inlinable
        mutating func evictTail(reason: EvictionReason) -> Removal {
            let slot = tail
            erase(bucket: bucket(of: slot))
            return takeOut(slot, reason: reason)
        }

        /// Unlinks `slot`, moves its key and value out and frees the slot. The caller has
        /// erased its bucket.
        @inlinable
        mutating func takeOut(_ slot: Int32, reason: EvictionReason) -> Removal {
            let position = Int(slot)
            contentChanges.advance()
            unlink(slot)
            let cost = costs?[position] ?? 0
            totalCost -= cost
            let entry = (entries + position).move()
            free.append(slot)
            count -= 1
            return Removal(key: entry.key, value: entry.value, reason: reason, cost: cost)
        }

        @inlinable
        mutating func setCost(_ cost: Int, at position: Int) {
            if let costs {
                costs[position] = cost
            } else if cost != 0 {
                let buffer = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
                buffer.initialize(repeating: 0, count: capacity)
                buffer[position] = cost
                costs = buffer
            }
        }

        @inlinable
        mutating func setExpiry(_ expiry: Double, at position: Int) {
            if let expiries {
                expiries[position] = expiry
            } else if expiry != .infinity {
                let buffer = UnsafeMutablePointer<Double>.allocate(capacity: capacity)
                buffer.initialize(repeating: .infinity, count: capacity)
                buffer[position] = expiry
                expiries = buffer
            }
        }

        @inlinable
        mutating func moveToHead(_ slot: Int32) {
            guard slot != head else { return }
            unlink(slot)
            entries[Int(slot)].previous = -1
            entries[Int(slot)].next = head
            if head >= 0 { entries[Int(head)].previous = slot } else { tail = slot }
            head = slot
        }

        @inlinable
        mutating func unlink(_ slot: Int32) {
            let previous = entries[Int(slot)].previous
            let next = entries[Int(slot)].next
            if previous >= 0 { entries[Int(previous)].next = next } else { head = next }
            if next >= 0 { entries[Int(next)].previous = previous } else { tail = previous }
        }

        /// Doubles the table and the slots. Called only with ``free`` empty, so all `used`
        /// slots are live.
        @usableFromInline
        mutating func grow() {
            let bucketCount = 2 * (bucketMask + 1)
            let newCapacity = bucketCount / 4 * 3
            precondition(newCapacity <= Int(Int32.max), "a MemoryCache holds at most \(Int32.max) entries")
            let newEntries = UnsafeMutablePointer<Entry>.allocate(capacity: newCapacity)
            newEntries.moveInitialize(from: entries, count: used)
            entries.deallocate()
            entries = newEntries
            if let costs {
                let buffer = UnsafeMutablePointer<Int>.allocate(capacity: newCapacity)
                buffer.moveInitialize(from: costs, count: capacity)
                (buffer + capacity).initialize(repeating: 0, count: newCapacity - capacity)
                costs.deallocate()
                self.costs = buffer
            }
            if let expiries {
                let buffer = UnsafeMutablePointer<Double>.allocate(capacity: newCapacity)
                buffer.moveInitialize(from: expiries, count: capacity)
                (buffer + capacity).initialize(repeating: .infinity, count: newCapacity - capacity)
                expiries.deallocate()
                self.expiries = buffer
            }
            capacity = newCapacity
            buckets.deallocate()
            buckets = .allocate(capacity: bucketCount)
            buckets.initialize(repeating: -1, count: bucketCount)
            bucketMask = bucketCount - 1
            // Slot order, not bucket order: reinserting a table's buckets in order into a table
            // of the same hash is what makes linear probing cluster.
            for slot in 0..<used {
                var bucket = entries[slot].key.hashValue & bucketMask
                while buckets[bucket] >= 0 { bucket = (bucket &+ 1) & bucketMask }
                buckets[bucket] = Int32(truncatingIfNeeded: slot)
            }
        }
    }
}
