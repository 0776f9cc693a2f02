import Foundation
import StowageCore

extension MemoryCache {
    /// How a ``MemoryCache`` limits itself and whom it tells about removed entries.
    ///
    /// ```swift
    /// var configuration = MemoryCache<URL, Data>.Configuration(name: "thumbnails")
    /// configuration.costLimit = 50_000_000        // bytes, if costs are byte counts
    /// configuration.defaultTimeToLive = .seconds(300)   // five minutes
    /// configuration.onEviction = { url, _, reason in print("dropped \(url): \(reason)") }
    /// let cache = try MemoryCache(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// A name for metrics (the `cache` dimension). Default `"memory"`.
        public var name: String
        /// The most entries the cache keeps; `nil` (the default) for no limit. Must be positive.
        public var countLimit: Int?
        /// The most total cost the cache keeps, in the unit the caller gives costs in (bytes,
        /// usually); `nil` (the default) for no limit. Must be positive.
        public var costLimit: Int?
        /// The time-to-live, in seconds, of values stored without one; `nil` (the default) for
        /// values that stay until a limit, memory pressure or the caller removes them. Must be
        /// positive.
        public var defaultTimeToLive: Duration?
        /// The clock expiry is measured with. Default `CacheClock/system`; tests pass a clock
        /// they advance by hand. Read only for values that have a time-to-live.
        public var clock: CacheClock
        /// Called once for every entry that leaves the cache, with the reason, after the cache's
        /// lock is released (the callback may use the cache). Not called when
        /// ``MemoryCache/setValue(_:forKey:cost:timeToLive:)`` replaces a key's value. Runs on the
        /// thread that caused the removal. Default `nil`.
        public var onEviction: (@Sendable (Key, Value, EvictionReason) -> Void)?
        /// The source whose notifications trim the cache (it holds the cache weakly). Default
        /// ``MemoryPressureSource/shared``, which only notifies once the app runs it or calls
        /// ``MemoryPressureSource/notify(_:)``; `nil` to react only to
        /// ``MemoryCache/handleMemoryPressure(_:)``.
        public var memoryPressureSource: MemoryPressureSource?
        /// What the cache drops at each memory-pressure level. Default
        /// ``MemoryPressureResponse/default``: half on a warning, everything when critical.
        public var memoryPressureResponse: MemoryPressureResponse

        /// A configuration with the defaults above: no limits, no time-to-live, the system clock.
        ///
        /// - Parameters:
        ///   - name: A name for metrics. Default `"memory"`.
        ///   - countLimit: The most entries kept; `nil` for no limit.
        ///   - costLimit: The most total cost kept; `nil` for no limit.
        ///   - defaultTimeToLive: How long a value without its own time-to-live lives; `nil` for no expiry.
        public init(
            name: String = "memory",
            countLimit: Int? = nil,
            costLimit: Int? = nil,
            defaultTimeToLive: Duration? = nil
        ) {
            self.name = name
            self.countLimit = countLimit
            self.costLimit = costLimit
            self.defaultTimeToLive = defaultTimeToLive
            self.clock = .system
            self.onEviction = nil
            self.memoryPressureSource = .shared
            self.memoryPressureResponse = .default
        }

        func validate() throws {
            if let countLimit, countLimit <= 0 {
                throw StowageError.invalidConfiguration(
                    "cannot set the memory cache '\(name)' countLimit to \(countLimit): "
                        + "the limit must be > 0 (use nil for no limit)"
                )
            }
            if let costLimit, costLimit <= 0 {
                throw StowageError.invalidConfiguration(
                    "cannot set the memory cache '\(name)' costLimit to \(costLimit): "
                        + "the limit must be > 0 (use nil for no limit)"
                )
            }
            if let defaultTimeToLive, !(defaultTimeToLive > .zero) {
                throw StowageError.invalidConfiguration(
                    "cannot set the memory cache '\(name)' defaultTimeToLive to \(defaultTimeToLive): "
                        + "it must be more than zero (use nil for no expiry)"
                )
            }
        }
    }
}
