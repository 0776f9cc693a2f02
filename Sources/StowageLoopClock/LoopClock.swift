import NIOCore
import StowageCore
import Synchronization

/// The time a component's event-loop deadlines (upstream and connection timeouts, the Redis
/// command, connect and pool-wait timeouts) are measured and scheduled by.
///
/// In production it is NIO's own: ``now()`` is `NIODeadline.now()` and a deadline is an
/// `EventLoop.scheduleTask(deadline:)` timer, with nothing in between. Built from a test clock
/// (a `SteppedClock`), instants are the clock's time as `NIODeadline`s and each timer is a task
/// sleeping on the clock: advancing the clock past a deadline runs its callback on the event
/// loop it was scheduled on (`EventLoop.execute`), so a timeout is an event a test causes rather
/// than a race with real time on a loaded machine. Components take `any Clock<Duration>` in
/// their public configuration (default `ContinuousClock()`, which means NIO's clock) and wrap it
/// once with ``init(_:)``.
package struct LoopClock: Sendable {
    /// `nil`: NIO's clock and timers.
    private let clock: ElapsedClock?

    /// NIO's clock and timers.
    package static let system = LoopClock(elapsed: nil)

    private init(elapsed: ElapsedClock?) { clock = elapsed }

    /// `clock`'s time; a `ContinuousClock` (the public options' default) is NIO's own clock,
    /// which measures the same real time without a task per timer.
    package init(_ clock: any Clock<Duration>) {
        self.clock = clock is ContinuousClock ? nil : ElapsedClock(clock)
    }

    /// Whether deadlines run on NIO's own timers (real time).
    package var isSystem: Bool { clock == nil }

    /// The present moment, as deadlines on this clock are expressed.
    package func now() -> NIODeadline {
        guard let clock else { return .now() }
        return .uptimeNanoseconds(UInt64(clamping: clock.now.saturatingNanoseconds))
    }

    /// Runs `task` on `loop` once the clock reaches `deadline`, as `EventLoop.scheduleTask` does:
    /// cancelling the result on the loop before then means `task` never runs.
    package func scheduleTask<T: Sendable>(
        on loop: any EventLoop,
        deadline: NIODeadline,
        _ task: @escaping @Sendable () throws -> T
    ) -> Scheduled<T> {
        guard let clock else { return loop.scheduleTask(deadline: deadline, task) }
        return Self.schedule(on: loop, deadline: deadline, clock: clock) { task }
    }

    /// `scheduleTask(on:deadline:_:)` `amount` from ``now()``.
    package func scheduleTask<T: Sendable>(
        on loop: any EventLoop,
        in amount: TimeAmount,
        _ task: @escaping @Sendable () throws -> T
    ) -> Scheduled<T> {
        scheduleTask(on: loop, deadline: now() + amount, task)
    }

    /// `scheduleTask(on:deadline:_:)` for a channel handler's non-`Sendable` callback, scheduled
    /// from the loop it runs on (`context.eventLoop.assumeIsolated()`).
    package func scheduleTask(
        on loop: NIOIsolatedEventLoop,
        deadline: NIODeadline,
        _ task: @escaping () -> Void
    ) -> Scheduled<Void> {
        guard let clock else { return loop.scheduleTask(deadline: deadline, task) }
        let bound = NIOLoopBound(task, eventLoop: loop.nonisolated())
        return Self.schedule(on: loop.nonisolated(), deadline: deadline, clock: clock) { bound.value }
    }

    /// `scheduleTask(on:deadline:_:)` (isolated) `amount` from ``now()``.
    package func scheduleTask(
        on loop: NIOIsolatedEventLoop,
        in amount: TimeAmount,
        _ task: @escaping () -> Void
    ) -> Scheduled<Void> {
        scheduleTask(on: loop, deadline: now() + amount, task)
    }

    /// A task that sleeps on `clock` until `deadline`, then runs the callback on `loop` unless
    /// the timer was cancelled first. `callback` is read on the loop (a loop-bound value may be).
    private static func schedule<T: Sendable>(
        on loop: any EventLoop,
        deadline: NIODeadline,
        clock: ElapsedClock,
        callback: @escaping @Sendable () -> () throws -> T
    ) -> Scheduled<T> {
        let promise = loop.makePromise(of: T.self)
        let box = CancelFlag()
        let offset = Duration.nanoseconds(Int64(clamping: deadline.uptimeNanoseconds))
        let sleeper = Task {
            do { try await clock.sleep(until: offset) } catch { return }
            loop.execute {
                // Cancelled on the loop after the sleep ended but before this ran: as NIO's
                // timers, a cancelled task does not run.
                guard !box.isSet else { return }
                promise.completeWith(Result { try callback()() })
            }
        }
        return Scheduled(promise: promise) {
            box.set()
            sleeper.cancel()
            promise.fail(EventLoopError.cancelled)
        }
    }
}

/// Set once by a cancel, read on the loop before the callback runs.
private final class CancelFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
