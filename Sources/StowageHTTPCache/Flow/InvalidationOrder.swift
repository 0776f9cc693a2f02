import StowageCache
import Synchronization

/// Orders invalidations with the fetches from the origin that were under way when they began,
/// so that an invalidation is final: a response fetched before it is never stored after it.
///
/// Every invalidation (a URL, a URL prefix, a tag, a ban, a removal of the cache's contents,
/// one heard from another node) moves ``current`` and is remembered with what it covers. A fetch
/// notes ``current`` when it sends its request; its store (``commit(uri:tags:startedAt:_:)``)
/// is skipped when an invalidation that covers it began since. The response still goes to the
/// requests that were waiting on it: it was the origin's answer when they asked. This is
/// Varnish's ban list checked against an object's insertion time, and RFC 9111 §4.2.3's
/// `request_time` ordering two responses.
///
/// An invalidation waits, before it removes anything, for the stores that were committing
/// when it began: each either saw it and stored nothing, or landed before the removal, which
/// then finds it. So nothing it covers survives its return, whether its removal locks the key
/// (a URL) or scans for keys (a prefix or a tag).
final class InvalidationOrder: Sendable {
    /// What an invalidation covers.
    enum Scope: Sendable, Equatable {
        /// One URL's stored responses (its cache key's URI).
        case uri(String)
        /// Every URL starting with the prefix.
        case prefix(String)
        /// Every response carrying the tag.
        case tag(String)
        /// Everything.
        case all

        /// Whether this covers a response of `uri` with `tags`; `tags` `nil` when they are not
        /// known yet (a fetch still waiting for its head), which any tag covers.
        func covers(uri: String, tags: [String]?) -> Bool {
            switch self {
            case .uri(let invalidated): return invalidated == uri
            // Bytes, as the removal finds the keys under it (KeyPrefix).
            case .prefix(let prefix): return KeyPrefix.covers(uri, under: prefix)
            case .tag(let tag): return tags?.contains(tag) ?? true
            case .all: return true
            }
        }
    }

    private struct State {
        /// Invalidations begun so far.
        var sequence: UInt64 = 0
        /// The latest invalidations, oldest first, at most ``remembered`` of them; a fetch that
        /// began before the oldest of them is taken as covered.
        var recent: [(sequence: UInt64, scope: Scope)] = []
        /// Stores committing now: what they store, and the invalidations waiting for them to land.
        var commits: [UInt64: Commit] = [:]
        var nextCommit: UInt64 = 0

        /// Counts an invalidation of `scope` as begun now and remembers it, forgetting the
        /// oldest half once twice ``remembered`` are kept.
        mutating func record(_ scope: Scope) {
            sequence += 1
            recent.append((sequence, scope))
            if recent.count > 2 * InvalidationOrder.remembered { recent.removeFirst(InvalidationOrder.remembered) }
        }
    }

    private struct Commit {
        let uri: String
        let tags: [String]
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// How many invalidations are remembered. A fetch outlasting this many stores nothing.
    static let remembered = 4096

    /// The invalidations begun so far: what a fetch notes when it starts.
    var current: UInt64 { state.withLock { $0.sequence } }

    /// Whether an invalidation that began after `start` covers a response of `uri` with `tags`
    /// (`nil`: not known yet).
    func isCovered(uri: String, tags: [String]?, since start: UInt64) -> Bool {
        state.withLock { Self.isCovered(uri: uri, tags: tags, since: start, in: $0) }
    }

    private static func isCovered(uri: String, tags: [String]?, since start: UInt64, in state: State) -> Bool {
        guard state.sequence > start else { return false }
        // Forgotten invalidations between `start` and the oldest remembered one might cover it.
        guard let oldest = state.recent.first, oldest.sequence <= start + 1 else { return true }
        for entry in state.recent.reversed() {
            if entry.sequence <= start { break }
            if entry.scope.covers(uri: uri, tags: tags) { return true }
        }
        return false
    }

    /// Notes a removal through another handle on the same directory (another process, say,
    /// seen through the store's shared removal count): an invalidation of everything, so no
    /// fetch under way stores its response. Nothing to wait for: that removal is done.
    func noteRemovedElsewhere() {
        state.withLock { $0.record(.all) }
    }

    /// Begins an invalidation of `scope`: fetches under way from now on store nothing it
    /// covers, and this returns once the stores it covers that were committing have landed (or
    /// given up), so that the caller's removal finds what they stored.
    func begin(_ scope: Scope) async {
        let committing = state.withLock { state -> [UInt64] in
            state.record(scope)
            return state.commits.compactMap { scope.covers(uri: $0.value.uri, tags: $0.value.tags) ? $0.key : nil }
        }
        for id in committing {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = state.withLock { state -> Bool in
                    guard state.commits[id] != nil else { return false }
                    state.commits[id]!.waiters.append(continuation)
                    return true
                }
                if !waits { continuation.resume() }
            }
        }
    }

    /// Runs `write`, the store of a response of `uri` with `tags` fetched from `start` on,
    /// unless an invalidation that covers it began since.
    ///
    /// - Returns: What `write` returns; `nil` when it did not run.
    func commit<T>(
        uri: String,
        tags: [String],
        startedAt start: UInt64,
        _ write: () async throws -> T
    ) async rethrows -> T? {
        let id = state.withLock { state -> UInt64? in
            guard !Self.isCovered(uri: uri, tags: tags, since: start, in: state) else { return nil }
            state.nextCommit += 1
            state.commits[state.nextCommit] = Commit(uri: uri, tags: tags)
            return state.nextCommit
        }
        guard let id else { return nil }
        defer {
            let waiting = state.withLock { $0.commits.removeValue(forKey: id)?.waiters } ?? []
            for continuation in waiting { continuation.resume() }
        }
        return try await write()
    }
}
