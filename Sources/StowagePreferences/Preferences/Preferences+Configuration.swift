import Logging
import StowageCore

extension Preferences {
    /// How far a returned `set` survives.
    public enum Durability: Sendable, Hashable {
        /// The write is in the kernel once `set` returns: it survives the process being killed
        /// or crashing at any point, not a power loss. One `pwrite`, a few microseconds. The
        /// default, and what UserDefaults gives between its periodic flushes.
        case processCrash
        /// Each `set` also waits for the device (`fdatasync`; `F_FULLFSYNC` on Apple): it
        /// survives a power loss, at milliseconds per write. ``Preferences/synchronize()``
        /// gives the same guarantee for the writes so far, on demand.
        case powerLoss
    }

    /// How a preferences store behaves.
    public struct Configuration: Sendable {
        /// How far a returned `set` survives. Default ``Durability/processCrash``.
        public var durability: Durability = .processCrash
        /// The log is rewritten as one record per value once it holds at least this many bytes
        /// and more than twice as many records as values, by a process that has the suite open
        /// alone (see ``Preferences/compact()``). Default 256 KiB.
        public var compactionThreshold = 256 * 1024
        /// How often a store with observers checks for other processes' changes. Default 250 ms.
        public var observationInterval: Duration = .milliseconds(250)
        /// What ``observationInterval`` is measured by. Default `ContinuousClock()`; tests pass a
        /// clock they advance.
        public var observationClock: any Clock<Duration> = ContinuousClock()
        /// The wall clock that dates the copy a repair keeps of a damaged file
        /// (`FILE.damaged-SECONDS`, ``PreferencesRecovery/damagedCopy``). Default
        /// `CacheClock.system`; tests pass a `ManualClock`'s.
        public var clock: CacheClock = .system
        /// Where the store logs repairs and compactions.
        public var logger = Logger(label: "org.stowage.preferences", factory: SwiftLogNoOpLogHandler.init)

        /// A configuration with the defaults above.
        public init() {}
    }
}
