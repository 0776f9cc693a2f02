import Synchronization

/// The stores open in this process that keep data no directory names: caches in memory only,
/// such as an HTTP cache without a directory and the process-wide `HTTPCache.shared`.
///
/// A store on disk is reached through its directory: a clear or removal of that directory, by
/// any process, advances or retires its generation (`StoreGeneration`), and every handle open on
/// it follows. A cache in memory only has no such file, so it registers here while it is open,
/// and "clear caches" (`ClearCaches`, `stowage clear-caches` in-process) empties every one of
/// them, as `URLCache.shared.removeAllCachedResponses()` is part of an app's "clear caches".
/// Durable stores never register: "clear caches" must not reach them.
package final class OpenStores: Sendable {
    /// The registry of this process.
    package static let process = OpenStores()

    /// One store's place in the registry, held by the store: it leaves the registry when the
    /// store lets it go (at the store's `deinit`).
    package final class Registration: Sendable {
        fileprivate let id: UInt64
        fileprivate let registry: OpenStores
        /// What the store is, for reports: `HTTPCache 'name' (memory only)`.
        package let name: String
        private let clear = Mutex<(@Sendable () async throws -> Void)?>(nil)

        fileprivate init(id: UInt64, registry: OpenStores, name: String) {
            self.id = id
            self.registry = registry
            self.name = name
        }

        deinit { registry.leave(id) }

        /// Sets what empties the store: called once its owner is made, so that `body` can hold
        /// the owner weakly.
        package func whenCleared(_ body: @escaping @Sendable () async throws -> Void) {
            clear.withLock { $0 = body }
        }

        fileprivate func run() async throws {
            try await clear.withLock { $0 }?()
        }
    }

    private struct State {
        var nextID: UInt64 = 0
        /// Weak: a registration lives as long as its store holds it.
        var entries: [UInt64: WeakRegistration] = [:]
    }

    private struct WeakRegistration: @unchecked Sendable {
        // @unchecked: a weak reference to a Sendable class, read and written under the lock.
        weak var registration: Registration?
    }

    private let state = Mutex(State())

    /// An empty registry: ``process`` is the one stores register in; another is for a caller
    /// that must not reach them (a test running beside others in one process).
    package init() {}

    /// Registers a store named `name`; keep the registration as long as the store is open and
    /// tell it how to empty the store (``Registration/whenCleared(_:)``).
    package func register(_ name: String) -> Registration {
        state.withLock { state in
            state.nextID += 1
            let registration = Registration(id: state.nextID, registry: self, name: name)
            state.entries[state.nextID] = WeakRegistration(registration: registration)
            return registration
        }
    }

    private func leave(_ id: UInt64) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    /// The stores registered now, in the order they registered.
    package var registered: [Registration] {
        state.withLock { state in state.entries.sorted { $0.key < $1.key }.compactMap(\.value.registration) }
    }

    /// Empties every store registered now.
    ///
    /// - Returns: The stores that failed, with their errors; the others were emptied.
    @discardableResult
    package func clearAll() async -> [(name: String, error: any Error)] {
        var failures: [(name: String, error: any Error)] = []
        for registration in registered {
            do {
                try await registration.run()
            } catch {
                failures.append((registration.name, error))
            }
        }
        return failures
    }
}
