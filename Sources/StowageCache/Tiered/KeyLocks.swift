import Synchronization

/// One change of a key at a time: an asynchronous lock per key, taken in arrival order.
///
/// A change of the levels has two halves (disk, then memory) with a suspension between them.
/// Two changes of one key that overlap could otherwise finish their halves in opposite orders
/// — the first one's memory half last, the second one's disk half last — and leave memory and
/// disk holding values no order of the changes would leave (a memory-only value in front of an
/// older disk copy that comes back once memory lets it go). Changes of different keys never wait
/// for each other; a waiter suspends, never blocking a thread.
final class KeyLocks: Sendable {
    /// The keys held, each with the changes waiting for it, oldest first.
    private let held = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// Runs `body` once no other change of `key` is running.
    func withLock<Result>(_ key: String, _ body: () async throws -> Result) async rethrows -> Result {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    private func acquire(_ key: String) async {
        let isFree = held.withLock { held in
            guard held[key] == nil else { return false }
            held[key] = []
            return true
        }
        if isFree { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isFreeNow = held.withLock { held in
                guard held[key] == nil else {
                    held[key]?.append(continuation)
                    return false
                }
                held[key] = []
                return true
            }
            if isFreeNow { continuation.resume() }
        }
    }

    /// Hands `key` to the longest waiter, or frees it.
    private func release(_ key: String) {
        let next = held.withLock { held -> CheckedContinuation<Void, Never>? in
            guard var waiting = held[key], !waiting.isEmpty else {
                held[key] = nil
                return nil
            }
            let next = waiting.removeFirst()
            held[key] = waiting
            return next
        }
        next?.resume()
    }
}
