import GRDB
import Logging

extension UserDatabases {
    /// How each user's database is opened, and where opening, migration and removal are logged.
    public struct Configuration: Sendable {
        /// GRDB's configuration for each pool (busy mode, tracing, `prepareDatabase` for keys or
        /// functions). WAL mode is always on. GRDB's default busy mode (fail at once) becomes a
        /// 5-second timeout; set another busy mode to override it.
        public var database: GRDB.Configuration
        /// Where opening, migration and removal are logged. Default: silent
        /// (`org.stowage.database`, no-op handler).
        public var logger: Logger
        /// What a removal's wait for a conflicting lock is measured by (up to a second, for a
        /// child process between `fork` and `exec` that still holds a released lock). Default:
        /// `ContinuousClock()`; tests pass a `SteppedClock` or `TickingClock`.
        public var waitClock: any Clock<Duration> = ContinuousClock()

        /// A configuration with the defaults above.
        ///
        /// - Parameter database: GRDB's configuration for each pool.
        public init(database: GRDB.Configuration = GRDB.Configuration()) {
            self.database = database
            logger = Logger(label: "org.stowage.database", factory: SwiftLogNoOpLogHandler.init)
        }
    }
}
