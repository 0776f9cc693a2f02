/// What a ``MemoryCache`` does at each ``MemoryPressureLevel``.
///
/// The default halves the cache on a warning and empties it when memory is critical. Image
/// caches, whose entries are large and cheap to decode again from disk, usually empty
/// themselves on the first warning: ``emptyOnWarning``.
///
/// ```swift
/// var configuration = MemoryCache<String, Image>.Configuration(name: "thumbnails")
/// configuration.memoryPressureResponse = .emptyOnWarning
/// ```
public struct MemoryPressureResponse: Sendable, Hashable {
    /// What to do at ``MemoryPressureLevel/warning``. Default ``MemoryPressureAction/halve``.
    public var warning: MemoryPressureAction
    /// What to do at ``MemoryPressureLevel/critical``. Default ``MemoryPressureAction/empty``.
    public var critical: MemoryPressureAction

    /// A response doing `warning` on a warning and `critical` when memory is critical.
    ///
    /// - Parameters:
    ///   - warning: The action at ``MemoryPressureLevel/warning``. Default ``MemoryPressureAction/halve``.
    ///   - critical: The action at ``MemoryPressureLevel/critical``. Default ``MemoryPressureAction/empty``.
    public init(warning: MemoryPressureAction = .halve, critical: MemoryPressureAction = .empty) {
        self.warning = warning
        self.critical = critical
    }

    /// Halve on a warning, empty when critical: NSCache-like caches' usual answer, and the
    /// default of ``MemoryCache/Configuration``.
    public static let `default` = MemoryPressureResponse()

    /// Empty on a warning and when critical, as AFNetworking's `AFImageCache` removes all its
    /// objects on `UIApplicationDidReceiveMemoryWarningNotification`.
    public static let emptyOnWarning = MemoryPressureResponse(warning: .empty, critical: .empty)

    /// The action for `level`.
    ///
    /// - Parameter level: How hard the system is pressed.
    /// - Returns: ``warning`` or ``critical``.
    public func action(for level: MemoryPressureLevel) -> MemoryPressureAction {
        switch level {
        case .warning: warning
        case .critical: critical
        }
    }
}

/// How a ``MemoryCache`` gives memory back at one ``MemoryPressureLevel``.
public enum MemoryPressureAction: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// Keep every entry: the level is not this cache's concern.
    ///
    /// Allowed for ``MemoryPressureLevel/critical`` too, for a cache whose entries cannot be
    /// rebuilt; the system may then end the process instead (iOS's jetsam, Linux's OOM killer),
    /// so other caches should give memory back.
    case ignore
    /// Trim to half the current count and half the current total cost, least recently used
    /// first.
    case halve
    /// Remove every entry.
    case empty

    /// The action's name: `ignore`, `halve` or `empty`.
    public var description: String { rawValue }
}
