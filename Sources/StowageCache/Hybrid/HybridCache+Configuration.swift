import StowageCore
import Tracing

extension HybridCache {
    /// How a ``HybridCache`` weighs the values it keeps in memory and uses its shared level.
    ///
    /// The memory and disk levels keep their own configurations (``MemoryCache/Configuration``,
    /// ``DiskCache/Configuration``); this one holds what only the hybrid knows: a value and its
    /// encoded bytes together, and how it works with the other nodes (``sharedLevel``).
    ///
    /// ```swift
    /// // An image costs its decoded bitmap, not its compressed file (SDWebImage's `sd_memoryCost`).
    /// let configuration = HybridCache<Bitmap>.Configuration { bitmap, _ in bitmap.bytesPerRow * bitmap.height }
    /// let cache = HybridCache(memory: memory, disk: disk, serializer: PNGSerializer(), configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// What a value counts towards the memory level's ``MemoryCache/Configuration/costLimit``,
        /// given the value and the size in bytes of its encoded form (what the disk level stores).
        ///
        /// Default: the encoded size, so that a memory cost limit is a byte budget of encoded
        /// data. A decoded value can be many times larger than its bytes (a JPEG against its
        /// bitmap): return its decoded size then, as SDWebImage's `SDImageCache` costs an image
        /// by `sd_memoryCost` (bytes per row × height), not by its file size.
        ///
        /// Called on every write (a disk-only one too, whose value the next read promotes) and on
        /// every promotion of a disk or shared copy into memory. A result below 0 or above ``maximumCost`` is refused: the
        /// call throws `StowageError` with code `.invalidConfiguration` and the cache is left as
        /// it was (an earlier value for the key stays readable).
        public var cost: @Sendable (_ value: Value, _ encodedByteCount: Int) -> Int

        /// How the cache works with its shared level, when it has one: the load lock's lease, the
        /// wait for another node's load and its polls, invalidations of disk copies, the check
        /// of disk copies after missed invalidations, and the writes kept during an outage.
        /// Default: ``SharedTierOptions``' defaults.
        public var sharedLevel: SharedTierOptions

        /// Where the spans of reads that miss memory and of writes go (see ``CacheTracing``).
        /// Default `nil`: the process's tracer, `InstrumentationSystem.tracer`, read once when
        /// the cache is made (a no-op tracer until the application bootstraps one: bootstrap it
        /// before making caches). Tests pass an
        /// `InMemoryTracer` here rather than bootstrapping the process-wide system.
        public var tracer: (any Tracer)?

        /// A configuration costing values by `cost`.
        ///
        /// - Parameters:
        ///   - cost: A value's memory cost from the value and its encoded size in bytes. Default:
        ///     the encoded size.
        ///   - sharedLevel: How the shared level is used. Default: ``SharedTierOptions``' defaults.
        ///   - tracer: Where spans go; `nil` (the default) for `InstrumentationSystem.tracer`.
        public init(
            cost: @escaping @Sendable (_ value: Value, _ encodedByteCount: Int) -> Int = { $1 },
            sharedLevel: SharedTierOptions = SharedTierOptions(),
            tracer: (any Tracer)? = nil
        ) {
            self.cost = cost
            self.sharedLevel = sharedLevel
            self.tracer = tracer
        }

        /// The largest cost ``cost`` may return: 2⁴⁸, the bytes a 48-bit virtual address space
        /// (x86-64, arm64) can hold. A larger cost is a bug in the cost function, and one near
        /// `Int.max` would overflow the memory level's running total.
        public static var maximumCost: Int { 1 << 48 }

        /// ``cost`` of `value`, checked.
        ///
        /// - Throws: `StowageError` with code `.invalidConfiguration` when it is outside `0...maximumCost`.
        func memoryCost(of value: Value, encodedByteCount: Int, key: String) throws -> Int {
            let cost = cost(value, encodedByteCount)
            guard (0...Self.maximumCost).contains(cost) else {
                throw StowageError.invalidConfiguration(
                    "cannot keep '\(key)' in memory: the cache's cost function returned \(cost) "
                        + "for a value of \(encodedByteCount) encoded bytes; a cost must be in 0...\(Self.maximumCost) "
                        + "(return the value's size in bytes, e.g. its decoded size); nothing was changed"
                )
            }
            return cost
        }
    }
}
