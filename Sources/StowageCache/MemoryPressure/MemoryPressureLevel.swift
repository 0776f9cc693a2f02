/// How hard the system is pressed for memory, as a cache should understand it.
public enum MemoryPressureLevel: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// Memory is short: drop what is cheap to recreate. A ``MemoryCache`` trims itself to half
    /// its count and half its total cost, unless its ``MemoryPressureResponse`` says otherwise.
    case warning
    /// Memory is nearly exhausted: drop everything that can be dropped. A ``MemoryCache``
    /// removes all its entries, unless its ``MemoryPressureResponse`` says otherwise.
    case critical

    /// The level's name: `warning` or `critical`.
    public var description: String { rawValue }
}

/// Something that gives memory back when the system runs short, such as a ``MemoryCache``.
///
/// Register conforming objects with a ``MemoryPressureSource``; it holds them weakly and calls
/// ``handleMemoryPressure(_:)`` on every notification.
public protocol MemoryPressureHandling: AnyObject, Sendable {
    /// Releases memory in proportion to `level`.
    ///
    /// Called on the thread that noticed the pressure (the source's watcher thread, or the
    /// caller of ``MemoryPressureSource/notify(_:)``); must not block for long.
    ///
    /// - Parameter level: How hard the system is pressed.
    func handleMemoryPressure(_ level: MemoryPressureLevel)
}
