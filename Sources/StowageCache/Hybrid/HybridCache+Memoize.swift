import Foundation
import Logging
import StowageCore
import Synchronization

extension HybridCache {
    /// The value of `compute` for `key`, computed at most once per `timeToLive` and recomputed
    /// a little *before* it expires, so that callers never wait for it once it exists.
    ///
    /// ```swift
    /// let rates = try await cache.memoized(forKey: "rates", timeToLive: .seconds(300)) {
    ///     try await fetchExchangeRates()                  // takes two seconds
    /// }
    /// ```
    ///
    /// - A miss computes; concurrent callers (in this process) share that one computation.
    /// - A hit returns the stored value. Near expiry a hit may also start a recomputation in the
    ///   background, with a probability that rises as expiry nears and with how long `compute`
    ///   took last time: the caller draws `-duration × beta × log(random)` and refreshes when
    ///   the draw reaches past the expiry ("XFetch", Vattani et al., *Optimal Probabilistic
    ///   Cache Stampede Prevention*, VLDB 2015; python diskcache's `memoize_stampede`). Only one
    ///   process recomputes at a time (a claim row in the disk index that expires by itself);
    ///   every other caller keeps getting the stored value meanwhile.
    /// - A failing background recomputation keeps the stored value (logged at warning);
    ///   a failing computation on a miss is thrown and stores nothing.
    ///
    /// - Parameters:
    ///   - key: The key the value is stored under.
    ///   - timeToLive: How long a computed value lives.
    ///   - tag: A label for ``removeAll(tagged:)``.
    ///   - beta: How eagerly to refresh early: 1 is the paper's optimum, larger refreshes earlier,
    ///     0 never early.
    ///   - compute: The function to memoize.
    public func memoized(
        forKey key: String,
        timeToLive: Duration,
        tag: String? = nil,
        beta: Double = 1,
        compute: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        precondition(timeToLive > .zero && beta >= 0, "memoized needs a positive timeToLive and a beta of 0 or more")
        if let info = try await disk.info(forKey: key), let cached = try await value(forKey: key) {
            if let expires = info.expires?.timeIntervalSince1970, let duration = info.computeSeconds, beta > 0 {
                let now = disk.configuration.clock.now().timeIntervalSince1970
                let draw = -duration * beta * log(Double.random(in: Double.leastNormalMagnitude...1))
                if now + draw >= expires {
                    refreshInBackground(key, timeToLive: timeToLive, tag: tag, lease: duration, compute: compute)
                }
            }
            return cached
        }
        return try await computation(key, timeToLive: timeToLive, tag: tag, reusingStored: true, compute: compute).value
    }

    /// The computation in flight for `key`, or a new one that stores its result.
    ///
    /// With `reusingStored`, a new computation first looks for a live stored value: a caller that
    /// missed just before another caller's computation stored its value and left `loads` must
    /// not compute a second time.
    private func computation(
        _ key: String,
        timeToLive: Duration,
        tag: String?,
        reusingStored: Bool = false,
        compute: @escaping @Sendable () async throws -> Value
    ) -> Task<Value, any Error> {
        loads.withLock { loads in
            if let running = loads[key] { return running }
            let task = Task<Value, any Error> {
                defer { _ = self.loads.withLock { $0.removeValue(forKey: key) } }
                if reusingStored, try await self.disk.info(forKey: key) != nil,
                    let stored = try await self.value(forKey: key)
                {
                    return stored
                }
                let start = ContinuousClock.now
                let value = try await compute()
                let elapsed = ContinuousClock.now - start
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                try await self.store(value, forKey: key, timeToLive: timeToLive, tag: tag, computeSeconds: seconds)
                return value
            }
            loads[key] = task
            return task
        }
    }

    /// Starts one early recomputation of `key` unless one runs here or in another process.
    private func refreshInBackground(
        _ key: String,
        timeToLive: Duration,
        tag: String?,
        lease duration: Double,
        compute: @escaping @Sendable () async throws -> Value
    ) {
        guard loads.withLock({ $0[key] == nil }) else { return }
        let claimKey = "\u{FFFF}stowage.memoize.refresh:" + key
        let logger = disk.configuration.logger
        refreshesInFlight.add(1, ordering: .relaxed)
        Task {
            defer { refreshesInFlight.subtract(1, ordering: .relaxed) }
            do {
                // The claim outlives the computation (a few compute times, at least a second) and
                // is left to expire rather than removed, so callers that decided to refresh a
                // moment later do not recompute the value just stored; a refresher that dies
                // frees it as soon.
                guard try await BlockingWork.run({ try self.disk.claim(claimKey, for: max(4 * duration, 1)) }) else {
                    return
                }
                _ = try await computation(key, timeToLive: timeToLive, tag: tag, compute: compute).value
            } catch {
                logger.warning(
                    "early recomputation failed; the stored value stays until it expires",
                    metadata: ["key": "\(key)", "error": "\(error)"]
                )
            }
        }
    }
}
