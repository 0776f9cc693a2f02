extension MemoryCache {
    /// The entries of a ``MemoryCache`` in recency order: a dictionary from key to slot, and an
    /// intrusive doubly linked list threaded through three contiguous buffers of slots.
    ///
    /// Every operation the cache makes on its hot path (lookup, insert, replace, evicting the
    /// least recently used entry) is O(1) and allocates nothing once the buffers have grown:
    /// freed slots go on a free list and are reused, and no entry is a class instance.
    ///
    /// Slots `0..<used` hold a live entry (linked from ``head``) or are on the free list;
    /// `keys` and `values` are initialized exactly for the live ones. The buffers grow only when
    /// the free list is empty, so growing moves `used` initialized slots.
    ///
    /// Noncopyable, so it owns its buffers alone; it lives inside the cache's `Mutex`.
    @usableFromInline
    struct Storage: ~Copyable {
        @usableFromInline var index: [Key: Int32] = [:]
        @usableFromInline var keys = UnsafeMutablePointer<Key>.allocate(capacity: 0)
        @usableFromInline var values = UnsafeMutablePointer<Value>.allocate(capacity: 0)
        @usableFromInline var links = UnsafeMutablePointer<Link>.allocate(capacity: 0)
        @usableFromInline var capacity = 0
        @usableFromInline var used = 0
        @usableFromInline var freeHead: Int32 = -1
        /// The most recently used slot, `-1` when empty.
        @usableFromInline var head: Int32 = -1
        /// The least recently used slot, `-1` when empty.
        @usableFromInline var tail: Int32 = -1
        /// The sum of the live entries' costs.
        @usableFromInline var totalCost = 0
        /// Most entries kept; `Int.max` for no limit.
        @usableFromInline let countLimit: Int
        /// Most total cost kept; `Int.max` for no limit.
        @usableFromInline let costLimit: Int
        /// Advanced by every insertion and removal (``MemoryCache/contentVersion``).
        @usableFromInline let contentChanges: MemoryCacheContentChanges

        @usableFromInline
        init(countLimit: Int, costLimit: Int, contentChanges: MemoryCacheContentChanges) {
            self.countLimit = countLimit
            self.costLimit = costLimit
            self.contentChanges = contentChanges
        }

        deinit {
            var slot = head
            while slot >= 0 {
                let position = Int(slot)
                (keys + position).deinitialize(count: 1)
                (values + position).deinitialize(count: 1)
                slot = links[position].next
            }
            keys.deallocate()
            values.deallocate()
            links.deallocate()
        }

        /// The number of live entries, expired ones included until they are noticed.
        @inlinable var count: Int { index.count }

        // MARK: Hot path

        /// The value for `key`, made most recently used; an expired entry is removed instead.
        ///
        /// - Parameter now: The time in seconds since the reference date; called only when the
        ///   entry has an expiry.
        @inlinable
        mutating func lookup(_ key: Key, now: () -> Double) -> Lookup {
            guard let position = index.index(forKey: key) else { return .miss }
            let slot = index.values[position]
            let expiry = links[Int(slot)].expiry
            if expiry != .infinity, expiry <= now() {
                index.remove(at: position)
                return .expired(takeOut(slot, reason: .expired))
            }
            moveToHead(slot)
            return .hit(values[Int(slot)], cost: links[Int(slot)].cost)
        }

        /// Stores `value` as the most recently used entry, then evicts least recently used
        /// entries while a limit is exceeded (possibly the new one, if its cost alone exceeds
        /// the cost limit).
        ///
        /// One hash lookup: the new entry takes a fresh slot and, when the key was present, the
        /// old slot is freed instead of being updated in place.
        @inlinable
        mutating func insert(_ value: Value, forKey key: Key, cost: Int, expiry: Double) -> Insertion {
            var insertion = Insertion()
            contentChanges.advance()
            // The running total must not pass Int.max (an overflow traps), even without a cost
            // limit: least recently used entries make room first, as a limit of Int.max would.
            while cost > Int.max - totalCost, tail >= 0 {
                insertion.evictions.append(evictTail(reason: .costLimit))
            }
            let slot = allocateSlot()
            let position = Int(slot)
            (keys + position).initialize(to: key)
            (values + position).initialize(to: value)
            (links + position).initialize(to: Link(previous: -1, next: head, cost: cost, expiry: expiry))
            if head >= 0 { links[Int(head)].previous = slot } else { tail = slot }
            head = slot
            totalCost += cost

            if let old = index.updateValue(slot, forKey: key) {
                insertion.replaced = takeOut(old, reason: .explicit)
            }
            if index.count > countLimit || totalCost > costLimit {
                evictOverLimits(into: &insertion.evictions)
            }
            return insertion
        }

        /// Removes the entry for `key`, if any.
        @inlinable
        mutating func remove(_ key: Key) -> Removal? {
            guard let slot = index.removeValue(forKey: key) else { return nil }
            return takeOut(slot, reason: .explicit)
        }

        // MARK: Trimming

        /// Removes least recently used entries until at most `count` remain and their total
        /// cost is at most `cost`.
        mutating func trim(toCount count: Int, cost: Int, reason: EvictionReason) -> [Removal] {
            var removed: [Removal] = []
            while index.count > count || (totalCost > cost && tail >= 0) {
                removed.append(evictTail(reason: reason))
            }
            return removed
        }

        /// Removes every entry whose expiry is at or before `now`, in O(count).
        mutating func removeExpired(now: Double) -> [Removal] {
            var removed: [Removal] = []
            var slot = tail
            while slot >= 0 {
                let link = links[Int(slot)]
                if link.expiry <= now {
                    index.removeValue(forKey: keys[Int(slot)])
                    removed.append(takeOut(slot, reason: .expired))
                }
                slot = link.previous
            }
            return removed
        }

        /// Removes every entry whose key satisfies `predicate`, in O(count).
        mutating func removeAll(where predicate: (Key) -> Bool) -> [Removal] {
            var removed: [Removal] = []
            var slot = tail
            while slot >= 0 {
                let previous = links[Int(slot)].previous
                if predicate(keys[Int(slot)]) {
                    index.removeValue(forKey: keys[Int(slot)])
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
                body(keys[Int(slot)], values[Int(slot)])
                slot = links[Int(slot)].previous
            }
        }

        /// What is inconsistent between the index, the list and the totals; empty when sound.
        /// O(count), for tests.
        func integrityViolations() -> [String] {
            var violations: [String] = []
            var seen = 0
            var cost = 0
            var previous: Int32 = -1
            var slot = head
            while slot >= 0, seen <= index.count {
                let link = links[Int(slot)]
                if link.previous != previous { violations.append("slot \(slot) links back to \(link.previous)") }
                if index[keys[Int(slot)]] != slot { violations.append("slot \(slot)'s key maps elsewhere") }
                seen += 1
                cost += link.cost
                previous = slot
                slot = link.next
            }
            if tail != previous { violations.append("tail is \(tail), the list ends at \(previous)") }
            if seen != index.count { violations.append("\(seen) slots linked, \(index.count) keys") }
            if cost != totalCost { violations.append("costs sum to \(cost), totalCost is \(totalCost)") }
            return violations
        }

        // MARK: List and slots

        @inlinable
        mutating func evictOverLimits(into evictions: inout Removals) {
            while index.count > countLimit {
                evictions.append(evictTail(reason: .countLimit))
            }
            while totalCost > costLimit, tail >= 0 {
                evictions.append(evictTail(reason: .costLimit))
            }
        }

        @inlinable
        mutating func evictTail(reason: EvictionReason) -> Removal {
            let slot = tail
            index.removeValue(forKey: keys[Int(slot)])
            return takeOut(slot, reason: reason)
        }

        /// Unlinks `slot`, moves its key and value out and puts the slot on the free list.
        /// The caller has removed (or replaced) its key in `index`.
        @inlinable
        mutating func takeOut(_ slot: Int32, reason: EvictionReason) -> Removal {
            let position = Int(slot)
            contentChanges.advance()
            unlink(slot)
            let cost = links[position].cost
            totalCost -= cost
            let removal = Removal(
                key: (keys + position).move(),
                value: (values + position).move(),
                reason: reason,
                cost: cost
            )
            links[position].next = freeHead
            freeHead = slot
            return removal
        }

        @inlinable
        mutating func moveToHead(_ slot: Int32) {
            guard slot != head else { return }
            unlink(slot)
            links[Int(slot)].previous = -1
            links[Int(slot)].next = head
            if head >= 0 { links[Int(head)].previous = slot } else { tail = slot }
            head = slot
        }

        @inlinable
        mutating func unlink(_ slot: Int32) {
            let link = links[Int(slot)]
            if link.previous >= 0 { links[Int(link.previous)].next = link.next } else { head = link.next }
            if link.next >= 0 { links[Int(link.next)].previous = link.previous } else { tail = link.previous }
        }

        @inlinable
        mutating func allocateSlot() -> Int32 {
            if freeHead >= 0 {
                let slot = freeHead
                freeHead = links[Int(slot)].next
                return slot
            }
            if used == capacity { grow() }
            used += 1
            return Int32(truncatingIfNeeded: used - 1)
        }

        /// Doubles the buffers. Called only with an empty free list, so all `used` slots are live.
        @usableFromInline
        mutating func grow() {
            let newCapacity = max(16, capacity * 2)
            precondition(newCapacity <= Int(Int32.max), "a MemoryCache holds at most \(Int32.max) entries")
            let newKeys = UnsafeMutablePointer<Key>.allocate(capacity: newCapacity)
            let newValues = UnsafeMutablePointer<Value>.allocate(capacity: newCapacity)
            let newLinks = UnsafeMutablePointer<Link>.allocate(capacity: newCapacity)
            newKeys.moveInitialize(from: keys, count: used)
            newValues.moveInitialize(from: values, count: used)
            newLinks.moveInitialize(from: links, count: used)
            keys.deallocate()
            values.deallocate()
            links.deallocate()
            keys = newKeys
            values = newValues
            links = newLinks
            capacity = newCapacity
        }
    }
}
