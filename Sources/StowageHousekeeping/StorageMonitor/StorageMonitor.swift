import Foundation
import Logging
import StowageCore
import Synchronization
import Tracing

/// Watches the volume's opportunistic capacity and, when it runs low, purges tier by tier until
/// the pressure is gone (Apple's storage-management guide's `StorageMonitor`): temporary files,
/// then HTTP caches, then other caches, then the container's items marked purgeable
/// (``MarkedItems``), then the purgeable directories' sweep (`PurgingTier`).
///
/// ```swift
/// let monitor = StorageMonitor(
///     purgeable: purgeable,
///     caches: [TemporaryFiles(container: container), images, feeds]
/// )
/// let service = Task { try await monitor.run() }    // checks every 5 minutes (a `Service`)
/// for await report in monitor.reports() { print("freed", report.bytesFreed.formatted(.compact)) }
/// let report = try await monitor.check()             // or on demand; nil when there was no pressure
/// ```
///
/// Under pressure means opportunistic capacity below ``Configuration/minimumFreeFraction`` of
/// the volume (10%) or below ``Configuration/minimumFreeBytes`` (200 MB). Each member is asked
/// for the bytes still missing (`PurgeRequest`, ``Configuration/bytesToRelieve(_:)``), so a
/// cache inside its own limits still gives back what the volume needs, least valuable entries
/// first; the capacity is read again after each tier. What was freed goes to the log, to
/// ``reports()`` subscribers and to the `onReport` callback.
public final class StorageMonitor: Sendable {
    /// Thresholds, interval, logger.
    public let configuration: Configuration

    private let purgeable: PurgeableDirectories?
    private let markedItems: MarkedItems?
    private let capacity: @Sendable () throws -> VolumeCapacity
    private let onReport: (@Sendable (Report) -> Void)?
    private let state = Mutex(State())

    private struct State {
        var caches: [any Purging] = []
        var subscribers: [UUID: AsyncStream<Report>.Continuation] = [:]
    }

    /// A monitor of the volume holding `purgeable`'s container (its caches location).
    ///
    /// - Parameters:
    ///   - purgeable: The directories to sweep in the last tier; `nil` for none.
    ///   - caches: What to purge, each in its `Purging/purgingTier`; more can be added with
    ///     ``add(_:)``.
    ///   - configuration: Thresholds and interval.
    ///   - capacity: Reads the capacity; default: `statvfs` of the container's caches location
    ///     (the current directory without a container). Tests pass their own.
    ///   - onReport: Called after every check that found pressure.
    public init(
        purgeable: PurgeableDirectories?,
        caches: [any Purging] = [],
        configuration: Configuration = Configuration(),
        capacity: (@Sendable () throws -> VolumeCapacity)? = nil,
        onReport: (@Sendable (Report) -> Void)? = nil
    ) {
        self.purgeable = purgeable
        // On the monitor's clock: the time left of its limit, handed to the removal, is counted
        // on ``Configuration/waitClock`` (with the default clock it was real time instead).
        self.markedItems =
            configuration.purgesMarkedItems
            ? purgeable.map { MarkedItems(container: $0.container, timeLimitClock: configuration.waitClock) } : nil
        self.configuration = configuration
        self.onReport = onReport
        let reserves = configuration.reserves
        let volume = purgeable.map { $0.container.url(for: .caches) } ?? URL(filePath: ".")
        self.capacity =
            capacity ?? {
                // The location may not exist yet: measure the nearest existing ancestor's volume.
                var url = volume
                while !FileManager.default.fileExists(atPath: url.fileSystemPath), url.pathComponents.count > 1 {
                    url = url.deletingLastPathComponent()
                }
                return try VolumeCapacity.forVolume(containing: url, reserves: reserves)
            }
        state.withLock { $0.caches = caches }
    }

    deinit {
        state.withLock { state in
            for subscriber in state.subscribers.values { subscriber.finish() }
        }
    }

    /// Times a tier is asked for what is still missing before the next tier's turn.
    static let passesPerTier = 3

    /// Adds a cache to purge under pressure.
    public func add(_ cache: any Purging) {
        state.withLock { $0.caches.append(cache) }
    }

    /// Reads the capacity now and purges if it is under pressure.
    ///
    /// - Returns: What was done, or `nil` when there was enough space.
    /// - Parameter timeLimit: A time budget for the relief, on ``Configuration/waitClock``;
    ///   `nil` uses ``Configuration/timeLimit``. It is checked between tiers and between
    ///   members, and what is left of it bounds the marked items' removal and the purgeable
    ///   directories' sweep; when it is spent the check stops and ``Report/reachedTimeLimit`` says so.
    /// - Throws: `StowageError` when the capacity cannot be read, or for a time limit that is not
    ///   positive; `CancellationError`.
    @discardableResult
    public func check(timeLimit: Duration? = nil) async throws -> Report? {
        let limit = timeLimit ?? configuration.timeLimit
        if let limit { try TimeLimitCheck.validate(limit) }
        let deadline = limit.map { Deadline(after: $0, on: configuration.waitClock) }
        let capacity = self.capacity
        let before = try await BlockingWork.run { try capacity() }
        guard configuration.isUnderPressure(before) else { return nil }
        // A span per purge, not per check: checks run every `interval`, most of them finding room.
        return try await configuration.activeTracer.withAnySpan(HousekeepingTracing.SpanName.purge) { span in
            let report = try await relieve(from: before, deadline: deadline)
            if span.isRecording {
                span.attributes[HousekeepingTracing.Attribute.bytesFreed] = Int(report.bytesFreed.rawValue)
                span.attributes[HousekeepingTracing.Attribute.stillUnderPressure] = report.isStillUnderPressure
                span.attributes[HousekeepingTracing.Attribute.reachedTimeLimit] = report.reachedTimeLimit
                span.attributes[HousekeepingTracing.Attribute.errorCount] = report.errors.count
            }
            return report
        }
    }

    /// The purge of ``check(timeLimit:)`` once it found pressure at `before`: tier by tier until
    /// the volume has room again or `deadline` passes.
    private func relieve(from before: VolumeCapacity, deadline: Deadline?) async throws -> Report {
        let capacity = self.capacity
        let logger = configuration.logger
        logger.warning(
            "storage pressure: purging",
            metadata: [
                "opportunistic": "\(before.availableForOpportunisticUsage.formatted(.compact))",
                "total": "\(before.total.formatted(.compact))",
            ]
        )
        var errors: [any Error] = []
        var sweep: PurgeReport?
        var marked: MarkedItems.Report?
        var freed: [(name: String, bytesFreed: ByteCount)] = []
        var skipped: [ClearReport.Failure] = []
        let purgers = state.withLock { $0.caches }
        var missing = configuration.bytesToRelieve(before)
        var lastSeen = before
        var reachedTimeLimit = false
        /// What is left of the time limit; `nil` without one.
        func timeLeft() -> Duration? { deadline.map { max($0.remaining(), .nanoseconds(1)) } }
        // Tier by tier, cheapest loss first; stop as soon as the pressure is gone.
        tiers: for tier in PurgingTier.allCases {
            try Task.checkCancellation()
            if deadline?.isPast == true {
                reachedTimeLimit = true
                break
            }
            if tier == .purgeableDirectories, let purgeable {
                do {
                    let swept = try await purgeable.sweep(timeLimit: timeLeft())
                    reachedTimeLimit = reachedTimeLimit || swept.reachedTimeLimit
                    sweep = swept
                    missing = max(.zero, missing - swept.bytesFreed)
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    errors.append(error)
                }
            }
            if tier == .markedItems, let markedItems, missing > .zero {
                do {
                    let removed = try await markedItems.purge(atLeast: missing, timeLimit: timeLeft())
                    reachedTimeLimit = reachedTimeLimit || removed.reachedTimeLimit
                    marked = removed
                    missing = max(.zero, missing - removed.bytesFreed)
                    for failure in removed.failures {
                        logger.error("removing a marked item failed", metadata: ["failure": "\(failure)"])
                    }
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    errors.append(error)
                }
            }
            let members = purgers.filter { $0.purgingTier == tier }
            let hasOwnWork =
                (tier == .purgeableDirectories && purgeable != nil) || (tier == .markedItems && markedItems != nil)
            guard !members.isEmpty || hasOwnWork else { continue }
            var relieved = false
            // Members count the bytes of their values; the volume also sees allocation rounding,
            // index pages and other writers. What the volume says wins: a tier whose pass made the
            // volume's free space grow is asked again for what is still missing, a few times at most.
            for _ in 0..<Self.passesPerTier {
                var freedThisPass = ByteCount.zero
                for cache in members {
                    try Task.checkCancellation()
                    if deadline?.isPast == true {
                        reachedTimeLimit = true
                        break tiers
                    }
                    do {
                        let outcome = try await cache.purgeNamingSkips(PurgeRequest(bytesToFree: missing))
                        let bytes = outcome.bytesFreed
                        for mount in outcome.skipped where !skipped.contains(mount) {
                            skipped.append(mount)
                            logger.warning(
                                "purging: \(FileSystemBoundary.skipMessage)",
                                metadata: ["cache": "\(cache.purgingName)", "path": "\(mount.path)"]
                            )
                        }
                        if let index = freed.firstIndex(where: { $0.name == cache.purgingName }) {
                            freed[index].bytesFreed += bytes
                        } else {
                            freed.append((cache.purgingName, bytes))
                        }
                        freedThisPass += bytes
                        missing = max(.zero, missing - bytes)
                    } catch {
                        errors.append(error)
                        logger.error(
                            "purging a cache failed",
                            metadata: ["cache": "\(cache.purgingName)", "error": "\(error)"]
                        )
                    }
                }
                guard let now = try? await BlockingWork.run({ try capacity() }) else { break }
                if !configuration.isUnderPressure(now) {
                    relieved = true
                    break
                }
                missing = configuration.bytesToRelieve(now)
                let volumeGained = now.availableForOpportunisticUsage > lastSeen.availableForOpportunisticUsage
                lastSeen = now
                if freedThisPass == .zero || !volumeGained { break }
            }
            if relieved {
                logger.info("storage pressure relieved", metadata: ["after": "\(tier)"])
                break
            }
        }
        let after = (try? await BlockingWork.run { try capacity() }) ?? before
        let report = Report(
            capacityBefore: before,
            capacityAfter: after,
            sweep: sweep,
            markedItems: marked,
            caches: freed,
            skipped: skipped,
            errors: errors,
            isStillUnderPressure: configuration.isUnderPressure(after),
            reachedTimeLimit: reachedTimeLimit
        )
        logger.notice(
            "storage pressure: purged",
            metadata: [
                "freed": "\(report.bytesFreed.formatted(.compact))",
                "opportunistic": "\(after.availableForOpportunisticUsage.formatted(.compact))",
                "stillUnderPressure": "\(report.isStillUnderPressure)", "errors": "\(errors.count)",
                "reachedTimeLimit": "\(reachedTimeLimit)",
            ]
        )
        for subscriber in state.withLock({ Array($0.subscribers.values) }) { subscriber.yield(report) }
        onReport?(report)
        return report
    }

    /// The reports of checks that found pressure, from now on; each call is a new subscription.
    public func reports() -> AsyncStream<Report> {
        let (stream, continuation) = AsyncStream.makeStream(of: Report.self)
        let id = UUID()
        state.withLock { $0.subscribers[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }
}
