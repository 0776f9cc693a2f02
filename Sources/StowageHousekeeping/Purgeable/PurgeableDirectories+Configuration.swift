import Logging
import StowageCore

extension PurgeableDirectories {
    /// How sweeps judge age and order, and where they log.
    public struct Configuration: Sendable {
        /// Where "now" comes from; tests inject a clock they move. Default: the system clock.
        public var clock: CacheClock
        /// The time a file's age is measured from for the policy. Default
        /// ``FileTimestamp/modification``: when the data was last written, as `find -mtime`.
        public var ageTimestamp: FileTimestamp
        /// The time that orders files for the size cap, oldest removed first. Default
        /// ``FileTimestamp/creation`` (the birth time where the file system has one, else the
        /// modification time), as `APPurgeablePath` removes "the files with the oldest creation time".
        public var capOrder: FileTimestamp
        /// Where registrations, sweeps and resets are logged. Default: `org.stowage.purgeable`, silent.
        public var logger: Logger
        /// What a sweep's or a reset's `timeLimit` is measured by. Default `ContinuousClock()`;
        /// tests pass a clock they move.
        public var timeLimitClock: any Clock<Duration> = ContinuousClock()

        /// Creates a configuration; the defaults are documented on each property.
        public init(
            clock: CacheClock = .system,
            ageTimestamp: FileTimestamp = .modification,
            capOrder: FileTimestamp = .creation,
            logger: Logger = Logger(label: "org.stowage.purgeable", factory: SwiftLogNoOpLogHandler.init)
        ) {
            self.clock = clock
            self.ageTimestamp = ageTimestamp
            self.capOrder = capOrder
            self.logger = logger
        }
    }
}
