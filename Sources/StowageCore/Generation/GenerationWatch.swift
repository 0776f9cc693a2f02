import Synchronization

/// What one memory tier last saw of its store's ``StoreGeneration``: it drops what it holds
/// when the store was cleared or removed since.
///
/// The protocol, for a tier that fills itself from the store:
///
/// ```swift
/// let generation = watch.check { memory.removeAll() }   // before every read
/// if let value = memory.value(forKey: key) { return value }
/// let value = try disk.read(key)
/// memory.setValue(value, forKey: key)
/// if !watch.isCurrent(generation) { memory.removeValue(forKey: key) }   // a clear raced the fill
/// ```
///
/// A check is one load from shared memory and one from an atomic, a few nanoseconds. `onChange`
/// runs before the new generation is recorded, so no reader that sees it recorded finds the old
/// contents; two readers that notice together may both run it, which only empties twice.
package final class GenerationWatch: Sendable {
    /// The generation followed.
    package let generation: StoreGeneration
    private let seen: Atomic<UInt64>

    package init(_ generation: StoreGeneration) {
        self.generation = generation
        seen = Atomic(generation.value)
    }

    /// The store's generation now; runs `onChange` first when it moved since the last check, or
    /// when the store was removed.
    @inline(__always)
    package func check(onChange: () -> Void) -> UInt64 {
        let current = generation.value
        // A removed store's tier stays empty: whatever was put in since is dropped too.
        if current != seen.load(ordering: .relaxed) || StoreGeneration.isRetired(current) {
            onChange()
            seen.store(current, ordering: .relaxed)
        }
        return current
    }

    /// Whether the store is still at `generation` (so a value read from it at that generation
    /// may be kept).
    @inline(__always)
    package func isCurrent(_ generation: UInt64) -> Bool {
        self.generation.value == generation
    }

    /// Whether the store was removed.
    package var isRetired: Bool { generation.isRetired }
}
