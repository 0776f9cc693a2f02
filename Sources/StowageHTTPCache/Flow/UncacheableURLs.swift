import Synchronization

/// URLs whose last response from the origin could not be stored, for a while: requests for them
/// go to the origin at once instead of waiting for another request's fetch (request collapsing),
/// which would store nothing they could use. Varnish's hit-for-miss objects (its built-in VCL
/// marks an uncacheable response so for 120 s) do this; without it every request for a
/// `no-store` URL waited for the one before it.
///
/// Only collapsing is skipped: a response that is storable again is stored as always, and its URL
/// is forgotten here. Bounded: at most ``maximumCount`` URLs, one chosen at random making room.
final class UncacheableURLs: Sendable {
    /// How long a URL stays marked: Varnish's 120 s.
    static let markedFor = 120.0
    static let maximumCount = 10_000

    private let marked = Mutex<[String: Double]>([:])

    /// Whether `uri` is marked at `now` (seconds since 1970).
    func contains(_ uri: String, now: Double) -> Bool {
        marked.withLock { marked in
            guard let until = marked[uri] else { return false }
            if now < until, until - now <= Self.markedFor { return true }
            marked[uri] = nil  // run out (or the clock went back past its mark)
            return false
        }
    }

    /// Marks `uri` until ``markedFor`` after `now`.
    func mark(_ uri: String, now: Double) {
        marked.withLock { marked in
            if marked[uri] == nil, marked.count >= Self.maximumCount { marked.remove(at: marked.startIndex) }
            marked[uri] = now + Self.markedFor
        }
    }

    /// Forgets `uri`: a response for it is being stored.
    func forget(_ uri: String) {
        _ = marked.withLock { $0.removeValue(forKey: uri) }
    }
}
