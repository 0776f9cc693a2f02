/// The names and attribute keys of the spans the housekeeping components record through
/// swift-distributed-tracing. They are stable: dashboards and alerts may match on them.
///
/// - ``CacheCleaner``: one ``SpanName/cleanerRun`` span per run, from its start until its report.
/// - ``StorageMonitor``: one ``SpanName/purge`` span per check that found the volume under
///   pressure (a check that finds room records nothing).
public enum HousekeepingTracing {
    /// Span names.
    public enum SpanName {
        /// One run of a ``CacheCleaner`` manifest.
        public static let cleanerRun = "stowage.cleaner.run"
        /// One purge of a ``StorageMonitor`` under storage pressure.
        public static let purge = "stowage.storage_monitor.purge"
    }

    /// Attribute keys.
    public enum Attribute {
        /// The bytes freed (measured; what would be freed in a dry run), an integer.
        public static let bytesFreed = "stowage.housekeeping.bytes_freed"
        /// On ``SpanName/cleanerRun``: whether it was a dry run, a boolean.
        public static let dryRun = "stowage.housekeeping.dry_run"
        /// On ``SpanName/cleanerRun``: the manifest's tasks, an integer.
        public static let taskCount = "stowage.housekeeping.task_count"
        /// Failures reported (tasks or purge members that failed), an integer.
        public static let errorCount = "stowage.housekeeping.error_count"
        /// Whether the time limit stopped the work, a boolean.
        public static let reachedTimeLimit = "stowage.housekeeping.reached_time_limit"
        /// On ``SpanName/purge``: whether the volume is still under pressure after it, a boolean.
        public static let stillUnderPressure = "stowage.housekeeping.still_under_pressure"
    }
}
