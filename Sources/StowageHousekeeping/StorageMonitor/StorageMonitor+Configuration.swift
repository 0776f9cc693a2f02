import Logging
import StowageCore
import Tracing

extension StorageMonitor {
    /// When the volume counts as short of space, and how often to look.
    public struct Configuration: Sendable {
        /// Under pressure when opportunistic capacity is below this fraction of the volume.
        /// Default `0.10` (Apple's storage guidance: "less than 10% free").
        public var minimumFreeFraction: Double
        /// Under pressure when opportunistic capacity is below this. Default 200 MB (Apple's storage guidance).
        public var minimumFreeBytes: ByteCount
        /// Time between checks while ``StorageMonitor/run()`` runs. Default 5 minutes.
        public var interval: Duration
        /// The reserves opportunistic capacity is computed with. Default `VolumeCapacity/Reserves/init(important:opportunistic:)`.
        public var reserves: VolumeCapacity.Reserves
        /// Where checks that found pressure, and what was freed, are logged. Default label
        /// `org.stowage.storage-monitor`, silent.
        public var logger: Logger
        /// What ``interval`` and ``timeLimit`` are measured by. Default `ContinuousClock()`;
        /// tests pass a clock they advance.
        public var waitClock: any Clock<Duration> = ContinuousClock()
        /// How long one check may spend relieving pressure before it stops and reports (Apple's
        /// storage guide: background cleanup stops when its time runs out). Default `nil`: no
        /// limit.
        public var timeLimit: Duration?
        /// Whether, with a container (through the purgeable directories), files and directories
        /// marked purgeable inside it are removed after the caches (``MarkedItems``). Default `true`.
        public var purgesMarkedItems = true
        /// Where the span of each purge goes (see ``HousekeepingTracing``). Default `nil`: the
        /// process's tracer, `InstrumentationSystem.tracer` (a no-op tracer until the application
        /// bootstraps one). Tests pass an `InMemoryTracer` here.
        public var tracer: (any Tracer)?

        /// Creates a configuration; the defaults are documented on each property.
        public init(
            minimumFreeFraction: Double = 0.10,
            minimumFreeBytes: ByteCount = 200 * .megabyte,
            interval: Duration = .seconds(300),
            reserves: VolumeCapacity.Reserves = VolumeCapacity.Reserves(),
            logger: Logger = Logger(label: "org.stowage.storage-monitor", factory: SwiftLogNoOpLogHandler.init)
        ) {
            self.minimumFreeFraction = minimumFreeFraction
            self.minimumFreeBytes = minimumFreeBytes
            self.interval = interval
            self.reserves = reserves
            self.logger = logger
        }

        /// The bytes that would bring `capacity` back above both thresholds; zero when it is not
        /// under pressure.
        public func bytesToRelieve(_ capacity: VolumeCapacity) -> ByteCount {
            let available = capacity.availableForOpportunisticUsage.rawValue
            let byFraction = Int64((Double(capacity.total.rawValue) * minimumFreeFraction).rounded(.up)) - available
            let byBytes = minimumFreeBytes.rawValue - available
            return ByteCount(max(0, byFraction, byBytes))
        }

        /// Whether `capacity` is below either threshold.
        public func isUnderPressure(_ capacity: VolumeCapacity) -> Bool {
            let fraction =
                capacity.total.rawValue > 0
                ? Double(capacity.availableForOpportunisticUsage.rawValue) / Double(capacity.total.rawValue) : 0
            return fraction < minimumFreeFraction || capacity.availableForOpportunisticUsage < minimumFreeBytes
        }
    }

    /// What one check under pressure did.
    public struct Report: Sendable {
        /// The capacity that triggered the purge.
        public var capacityBefore: VolumeCapacity
        /// The capacity afterwards.
        public var capacityAfter: VolumeCapacity
        /// The purge sweep's report, `nil` without purgeable directories.
        public var sweep: PurgeReport?
        /// The marked items removed, by path and bytes; `nil` when their tier was not reached.
        public var markedItems: MarkedItems.Report?
        /// Bytes each registered cache freed, by `Purging/purgingName`.
        public var caches: [(name: String, bytesFreed: ByteCount)]
        /// Mount points the members left in place with everything under them, as
        /// `rm --one-file-system` does (`"skipped: another file system"`), each named once: the
        /// temporary files' (``TemporaryFiles``) and any member's that names them
        /// (`Purging/purgeNamingSkips(_:)`). The sweep's and the marked items' are in their own
        /// reports.
        public var skipped: [ClearReport.Failure] = []
        /// What failed (the sweep, a cache), with the others still run.
        public var errors: [any Error]

        /// Bytes freed by the sweep, the marked items and the caches together.
        public var bytesFreed: ByteCount {
            caches.reduce((sweep?.bytesFreed ?? .zero) + (markedItems?.bytesFreed ?? .zero)) { $0 + $1.bytesFreed }
        }
        /// Whether the volume is still under pressure afterwards.
        public var isStillUnderPressure: Bool
        /// Whether the time limit stopped the check before the pressure was relieved.
        public var reachedTimeLimit = false
    }
}

extension StorageMonitor.Configuration {
    /// The tracer for one purge: ``tracer``, else the process's.
    var activeTracer: any Tracer { tracer ?? InstrumentationSystem.tracer }
}
