import Dispatch
import Foundation
import Synchronization

extension Preferences {
    /// Calls `onChange` with the new value each time `key`'s value changes — by this process or
    /// another — until the returned observation is cancelled or released.
    ///
    /// A change is a stored value that differs from the previous one (setting the same value
    /// again is not a change); a removal reports the key's default. This process's changes are
    /// reported on the thread that made them, before `set` returns; other processes' changes
    /// when this process next reads or writes the suite, or within
    /// ``Configuration/observationInterval``.
    public func observe<Value>(
        _ key: PreferenceKey<Value>,
        onChange: @escaping @Sendable (Value) -> Void
    ) -> PreferencesObservation {
        let identifier = observers.add(name: key.name) { stored in
            onChange(stored.flatMap(key.decode) ?? key.defaultValue)
        }
        startWatchingIfNeeded()
        return PreferencesObservation { [weak self] in
            guard let self else { return }
            if self.observers.remove(identifier) { self.stopWatching() }
        }
    }

    /// The values of `key` as they change (see ``observe(_:onChange:)`` for what a change is);
    /// the sequence ends when the consuming task is cancelled.
    public func changes<Value>(for key: PreferenceKey<Value>) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .unbounded)
        let observation = observe(key) { continuation.yield($0) }
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }

    private func startWatchingIfNeeded() {
        observers.startTimerIfNeeded(
            interval: configuration.observationInterval,
            clock: configuration.observationClock
        ) { [weak self] in self?.refresh() }
    }

    private func stopWatching() {
        observers.stopTimer()
    }
}

/// An active observation of a preference; cancel it, or release it, to stop.
public final class PreferencesObservation: Sendable {
    private let cancellation: Mutex<(@Sendable () -> Void)?>

    init(cancel: @escaping @Sendable () -> Void) {
        cancellation = Mutex(cancel)
    }

    /// Stops the observation; calling it again does nothing.
    public func cancel() {
        let cancel = cancellation.withLock { cancellation in
            defer { cancellation = nil }
            return cancellation
        }
        cancel?()
    }

    deinit { cancel() }
}

/// The observers of one store by preference name, and the timer that polls for other
/// processes' changes while there are any.
final class PreferencesObservers: Sendable {
    typealias Callback = @Sendable (PreferenceValue?) -> Void

    private struct State {
        var byName: [String: [UInt64: Callback]] = [:]
        var names: [UInt64: String] = [:]
        var nextIdentifier: UInt64 = 0
        /// Polls while there are observers; cancelled when the last one goes.
        var timer: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private static let queue = DispatchQueue(label: "org.stowage.preferences.observation")

    func add(name: String, callback: @escaping Callback) -> UInt64 {
        state.withLock { state in
            let identifier = state.nextIdentifier
            state.nextIdentifier += 1
            state.byName[name, default: [:]][identifier] = callback
            state.names[identifier] = name
            return identifier
        }
    }

    /// Removes an observer; returns whether none are left.
    func remove(_ identifier: UInt64) -> Bool {
        state.withLock { state in
            if let name = state.names.removeValue(forKey: identifier) {
                state.byName[name]?[identifier] = nil
                if state.byName[name]?.isEmpty == true { state.byName[name] = nil }
            }
            return state.names.isEmpty
        }
    }

    /// Calls the observers of each changed name, outside the lock, in the order of `changes`.
    func notify(_ changes: [PreferencesState.Change]) {
        let calls = state.withLock { state -> [(Callback, PreferenceValue?)] in
            guard !state.byName.isEmpty else { return [] }
            var calls: [(Callback, PreferenceValue?)] = []
            for change in changes {
                guard let callbacks = state.byName[change.key] else { continue }
                for identifier in callbacks.keys.sorted() { calls.append((callbacks[identifier]!, change.value)) }
            }
            return calls
        }
        for (callback, value) in calls { callback(value) }
    }

    /// Calls `tick` on the observation queue every `interval` on `clock` while there are
    /// observers.
    func startTimerIfNeeded(interval: Duration, clock: any Clock<Duration>, tick: @escaping @Sendable () -> Void) {
        state.withLock { state in
            guard state.timer == nil, !state.names.isEmpty else { return }
            state.timer = Task { await Self.poll(every: interval, on: clock, tick: tick) }
        }
    }

    /// Ticks at fixed times, `interval` apart from the start, until cancelled; a tick that
    /// overran skips the times it missed, as a repeating dispatch timer coalesces them.
    private static func poll<C: Clock<Duration>>(
        every interval: Duration,
        on clock: C,
        tick: @escaping @Sendable () -> Void
    ) async {
        var deadline = clock.now.advanced(by: interval)
        while (try? await clock.sleep(until: deadline, tolerance: nil)) != nil {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                queue.async {
                    tick()
                    done.resume()
                }
            }
            let now = clock.now
            repeat { deadline = deadline.advanced(by: interval) } while deadline <= now && interval > .zero
        }
    }

    func stopTimer() {
        state.withLock { state in
            guard state.names.isEmpty else { return }
            state.timer?.cancel()
            state.timer = nil
        }
    }

    deinit {
        state.withLock { $0.timer?.cancel() }
    }
}
