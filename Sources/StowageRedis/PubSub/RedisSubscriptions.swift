import Synchronization

/// The subscriptions a client made, so that its shutdown ends them too: a client owns every
/// connection it opened, a subscription's own connection included.
///
/// Held weakly: a subscription nobody holds any more has already ended (its `deinit` cancels it).
final class RedisSubscriptions: Sendable {
    private struct Held {
        weak var subscription: RedisSubscription?
    }

    private struct State {
        var held: [ObjectIdentifier: Held] = [:]
        var isShutdown = false
    }

    private let state = Mutex(State())

    /// Keeps `subscription` for ``shutdown()``; one made after the shutdown ends at once.
    func add(_ subscription: RedisSubscription) -> RedisSubscription {
        let isShutdown = state.withLock { state in
            guard !state.isShutdown else { return true }
            state.held = state.held.filter { $0.value.subscription != nil }
            state.held[ObjectIdentifier(subscription)] = Held(subscription: subscription)
            return false
        }
        if isShutdown { subscription.cancel() }
        return subscription
    }

    /// Cancels every subscription; later ones end as they are made. Returns those cancelled,
    /// for ``RedisSubscription/finished()``.
    @discardableResult
    func shutdown() -> [RedisSubscription] {
        let subscriptions = state.withLock { state in
            state.isShutdown = true
            defer { state.held.removeAll() }
            return state.held.values.compactMap(\.subscription)
        }
        for subscription in subscriptions { subscription.cancel() }
        return subscriptions
    }
}
