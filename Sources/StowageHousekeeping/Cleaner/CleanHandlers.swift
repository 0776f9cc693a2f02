import StowageCore

/// Handlers that manifest tasks name by `Class` and `Selectors`: Swift's counterpart of
/// `APUserCacheCleaner` calling class methods by name.
///
/// ```swift
/// var handlers = CleanHandlers()
/// handlers.register(className: "ImageStore", selector: "clearDisk", measuring: ["Library/Caches/images"]) {
///     try await imageStore.removeAll()
/// }
/// let cleaner = CacheCleaner(container: container, handlers: handlers)
/// ```
///
/// A task naming a selector nobody registered fails with a clear error, and runs none of its
/// selectors; the other tasks still run.
public struct CleanHandlers: Sendable {
    /// A handler's work.
    public typealias Body = @Sendable () async throws -> Void
    /// A handler's work that names what it left in place on purpose, such as the mount points a
    /// `DiskCache.removeAll()` skipped (its report's `failures`): they go into the task's
    /// ``CleanReport/TaskResult/failures``.
    public typealias ReportingBody = @Sendable () async throws -> [ClearReport.Failure]

    struct Handler: Sendable {
        var measuring: [String]
        var body: ReportingBody
    }

    private var handlers: [String: Handler] = [:]

    /// No handlers.
    public init() {}

    /// Registers (or replaces) the handler for `className` + `selector`.
    ///
    /// - Parameters:
    ///   - className: The manifest's `Class` of the tasks this handler runs.
    ///   - selector: The manifest's `Selector` of those tasks.
    ///   - measuring: Container paths the handler frees space in (e.g. `Library/Caches/images`),
    ///     measured before and after it runs so that the report can say what it freed. Without
    ///     them the task reports zero bytes.
    ///   - body: The work; a thrown error fails this task only.
    public mutating func register(
        className: String,
        selector: String,
        measuring: [String] = [],
        _ body: @escaping Body
    ) {
        handlers[Self.key(className, selector)] = Handler(measuring: measuring) {
            try await body()
            return []
        }
    }

    /// Registers (or replaces) the handler for `className` + `selector`, whose work returns what
    /// it left in place (a mount point it skipped, say): the task lists it among its failures.
    ///
    /// - Parameters: As for the handler that names nothing; `body` returns what it left.
    public mutating func registerReporting(
        className: String,
        selector: String,
        measuring: [String] = [],
        _ body: @escaping ReportingBody
    ) {
        handlers[Self.key(className, selector)] = Handler(measuring: measuring, body: body)
    }

    /// Whether a handler is registered for `className` + `selector`.
    public func contains(className: String, selector: String) -> Bool {
        handlers[Self.key(className, selector)] != nil
    }

    func handler(className: String, selector: String) -> Handler? {
        handlers[Self.key(className, selector)]
    }

    private static func key(_ className: String, _ selector: String) -> String { className + "." + selector }
}
