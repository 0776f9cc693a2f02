import StowageCore

/// How a ``HybridCache`` uses its ``SharedCacheTier``: ``HybridCache/Configuration/sharedLevel``.
///
/// The options are checked (``validate()``) where they are used: a load through the shared level
/// (``HybridCache/value(forKey:timeToLive:policy:orLoad:)``) throws `StowageError` with code
/// `.invalidConfiguration` instead of polling the shared level without a pause or locking
/// with a lease that has already run out.
public struct SharedTierOptions: Sendable {
    /// Longest a node holds a key's load lock; a loader that takes longer loses it (and its
    /// fenced write is refused) so a crashed node never blocks the others for long.
    public var loadLockLease: Duration = .seconds(30)
    /// Longest a node waits for another node's load before it loads itself.
    public var loadWaitTimeout: Duration = .seconds(10)
    /// First pause between polls of the shared level while another node loads; it doubles up
    /// to ``maximumPollInterval``.
    public var pollInterval: Duration = .milliseconds(5)
    /// Longest pause between polls.
    public var maximumPollInterval: Duration = .milliseconds(100)
    /// Whether an invalidation also removes the disk copy (not only the memory copy). On by
    /// default: a disk copy that outlives an overwrite elsewhere would be served stale.
    public var invalidatesDisk = true
    /// Whether a disk copy stored before this node last began hearing invalidations — before
    /// the cache was created (an earlier run), or before its invalidation channel broke and came
    /// back — is checked against the shared level before it is served, since invalidations sent
    /// meanwhile were missed. On by default. The check is one shared read per such copy (the
    /// shared value then replaces it; a copy the shared level no longer has is removed); while
    /// the shared level is unreachable the copy is served unchecked. Off serves such copies as
    /// they are, until they expire.
    public var confirmsDiskCopies = true
    /// Most keys and prefixes whose writes, removals or bans a node keeps to send when the shared level answers
    /// again after an outage; writes and removals past it stay local, and bans past it are sent
    /// as one ban of every key (logged once per outage), so that none is lost. At least 0
    /// (0 keeps none, bans included).
    public var maximumPendingWrites = 10_000

    /// What the load wait, the polls and the pauses before a refused replay of missed writes is
    /// tried again are measured by. Default `ContinuousClock()`; tests pass a clock they advance.
    public var waitClock: any Clock<Duration> = ContinuousClock()
    /// Called with the key when a load finds another node holding the key's lock and begins to
    /// wait for that node's value (before its first poll): the event that tells a test the
    /// fleet's loads overlap, so it can hold the loader until the others wait instead of
    /// making it slow. Nil by default.
    package var onWaitingForAnotherNode: (@Sendable (_ key: String) -> Void)?

    /// The defaults described on each property.
    public init() {}

    /// Checks every option.
    ///
    /// - Throws: `StowageError` `.invalidConfiguration` naming the option, its value and what is
    ///   allowed: ``loadLockLease``, ``pollInterval`` and ``maximumPollInterval`` more than zero,
    ///   ``loadWaitTimeout`` zero or more (zero: load at once, without waiting for another
    ///   node), ``maximumPollInterval`` at least ``pollInterval``, and ``maximumPendingWrites``
    ///   zero or more.
    public func validate() throws {
        for (name, value, example) in [
            ("loadLockLease", loadLockLease, ".seconds(30)"), ("pollInterval", pollInterval, ".milliseconds(5)"),
            ("maximumPollInterval", maximumPollInterval, ".milliseconds(100)"),
        ] where value <= .zero {
            throw StowageError.invalidConfiguration(
                "SharedTierOptions.\(name) is \(value); give a duration more than zero (e.g. \(example))"
            )
        }
        guard loadWaitTimeout >= .zero else {
            throw StowageError.invalidConfiguration(
                "SharedTierOptions.loadWaitTimeout is \(loadWaitTimeout); give zero or more (zero loads at once "
                    + "without waiting for another node's load; the default is .seconds(10))"
            )
        }
        guard maximumPollInterval >= pollInterval else {
            throw StowageError.invalidConfiguration(
                "SharedTierOptions.maximumPollInterval (\(maximumPollInterval)) is shorter than pollInterval "
                    + "(\(pollInterval)); give a maximum at least as long as the first pause"
            )
        }
        guard maximumPendingWrites >= 0 else {
            throw StowageError.invalidConfiguration(
                "SharedTierOptions.maximumPendingWrites is \(maximumPendingWrites); give zero or more "
                    + "(zero keeps no change to send after an outage; the default is 10000)"
            )
        }
    }
}
