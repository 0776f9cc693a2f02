import StowageCore

extension RedisSharedTier {
    /// How long the tier lets Redis keep a request waiting, and how it finds out that Redis
    /// answers again.
    ///
    /// A Redis that stops answering without closing its connections (a stopped process, a
    /// partitioned network, a server that takes commands but never replies) would otherwise cost
    /// each shared call its full command timeout, several times per cache request. The tier
    /// instead gives every call at most ``requestBudget``; the first call that runs out of it, or
    /// fails to connect, opens the tier's circuit breaker, after which calls fail at once (the
    /// caches read that as a miss and go on with memory and disk) while a background probe
    /// (`PING`) asks Redis again after ``firstProbeDelay``, doubling up to
    /// ``maximumProbeDelay``. The first answer closes the breaker.
    public struct Options: Sendable {
        /// Longest one shared call waits for Redis. Default 500 ms. A cache request makes one to
        /// five shared calls, but after the first one runs out the breaker is open and the rest
        /// fail at once, so a hung Redis costs a request at most about this long. Measured in
        /// real time (`ContinuousClock`), as the network is.
        public var requestBudget: Duration = .milliseconds(500)
        /// Pause before the first probe once the breaker opened. Default 100 ms.
        public var firstProbeDelay: Duration = .milliseconds(100)
        /// Longest pause between probes. Default 2 s, the client's longest reconnect backoff.
        public var maximumProbeDelay: Duration = .seconds(2)
        /// What the pauses between probes are measured by, and the pauses between attempts to
        /// read the epoch after invalidations stopped (at most 10 s of them). Default
        /// `ContinuousClock()`; tests pass a clock they advance.
        public var probeClock: any Clock<Duration> = ContinuousClock()
        /// What ``requestBudget`` is measured by. Default `ContinuousClock()`, real time, as the
        /// network runs on; tests pass a clock they advance, so a call runs out of its budget when
        /// the test says, not when a loaded machine happens to get there.
        public var requestBudgetClock: any Clock<Duration> = ContinuousClock()
        /// The wall clock an entry's expiry is written by (milliseconds since 1970, in the
        /// entry's header) and read against, so every node gives its copies the lifetime Redis
        /// has left. Default `CacheClock.system`; tests pass a `ManualClock`'s.
        public var entryClock: CacheClock = .system

        /// The defaults described on each property.
        public init() {}

        /// The longest duration accepted for any of the options: past an hour a budget or a
        /// pause no longer bounds anything an operator would wait for.
        public static let maximumDuration = Duration.seconds(3_600)

        /// Checks every option.
        ///
        /// - Throws: `StowageError` `.invalidConfiguration` naming the option, its value and what is
        ///   allowed: each duration must be more than zero and at most an hour, and
        ///   ``maximumProbeDelay`` at least ``firstProbeDelay``.
        public func validate() throws {
            for (name, value) in [
                ("requestBudget", requestBudget), ("firstProbeDelay", firstProbeDelay),
                ("maximumProbeDelay", maximumProbeDelay),
            ] where value <= .zero || value > Self.maximumDuration {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "RedisSharedTier.Options.\(name) is \(value); give a duration more than zero and at "
                        + "most one hour (e.g. .milliseconds(500))"
                )
            }
            guard maximumProbeDelay >= firstProbeDelay else {
                throw StowageError(
                    code: .invalidConfiguration,
                    message: "RedisSharedTier.Options.maximumProbeDelay (\(maximumProbeDelay)) is shorter than "
                        + "firstProbeDelay (\(firstProbeDelay)); give a maximum at least as long as the first delay"
                )
            }
        }
    }
}
