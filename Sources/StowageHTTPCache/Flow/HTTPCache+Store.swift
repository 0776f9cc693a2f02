import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore

extension HTTPCache {
    /// What ``storeIfAllowed(_:for:key:onDone:)`` did.
    struct StoreOutcome {
        /// The body to hand to the caller.
        var body: HTTPBody
        /// A store started (committed already, or committing as the body is read).
        var isUnderWay: Bool
        /// The store committed before the response is answered.
        var isCommitted: Bool
        /// Why, for traces.
        var note: String
        /// RFC 9211 `detail` for a response not stored for a reason the client may care about.
        var detail: String? = nil
        /// The will-cache hook's user info stored with the response.
        var userInfo: [String: String] = [:]
        /// RFC 9111 §3 does not let the response be stored (not a refusal of the hook, the
        /// size limits or the volume): its URL skips request collapsing for a while
        /// (``UncacheableURLs``).
        var isUncacheable = false

        /// RFC 9211 `detail`: `storing` for a store still under way — the field goes out with the
        /// head, before the body is read, so it says what is true then: the store has started
        /// (a volume that fills while the body streams fails it later, logged). A store the
        /// cache knew could not fit never starts and says why instead.
        var cacheStatusDetail: String? { detail ?? (isUnderWay && !isCommitted ? "storing" : nil) }
    }

    /// RFC 9211 `detail` of a response not stored because the disk cache has no room for it
    /// (a full volume, or a hard size limit), with no `stored` parameter.
    static let noSpaceDetail = "not-stored-no-space"

    /// Stores the origin's response if the rules, the forced-expiry rules and the will-cache
    /// hook allow it: the decisions are ``StoreAdmission``'s, this carries them out.
    /// Returns the body to hand to the caller (recorded as it is read), whether a store is
    /// under way or committed, and why (for traces); `onDone` reports when it completes.
    ///
    /// - Throws: What reading a small body whole throws (the origin closed or timed out mid-body).
    func storeIfAllowed(
        _ exchanged: OriginExchange,
        for request: HTTPRequest,
        key: CacheKey,
        onDone: @escaping @Sendable (Bool) -> Void
    ) async throws -> StoreOutcome {
        let (response, body) = (exchanged.response, exchanged.body)
        let (requestTime, responseTime) = (exchanged.requestTime, exchanged.responseTime)
        func refused(_ note: String, detail: String? = nil, serving served: HTTPBody) -> StoreOutcome {
            StoreOutcome(body: served, isUnderWay: false, isCommitted: false, note: note, detail: detail)
        }
        var candidate: StoreCandidate
        switch admission(of: response, for: request, responseTime: responseTime) {
        case .refused(let note, let detail):
            var outcome = refused(note, detail: detail, serving: body)
            outcome.isUncacheable = mode != .disabled  // refused by the rules, not by a cache that stores nothing
            return outcome
        case .admitted(let admitted): candidate = admitted
        }
        if configuration.minimumUses > 1 {
            let count = uses.record(key.uri)
            if count < configuration.minimumUses {
                return refused(
                    "not stored: requested \(count) of the \(configuration.minimumUses) times minimumUses asks",
                    serving: body
                )
            }
        }
        let tags = tags(in: response.headerFields)
        // Fetched before an invalidation that covers it: served, not stored (InvalidationOrder).
        // Another handle's removal since counts as one (``CacheLevels/whenOthersRemove(_:)``).
        levels.followStoreChanges()
        if invalidations.isCovered(uri: key.uri, tags: tags, since: exchanged.startedAt) {
            return refused("not stored: an invalidation of this URL began after it was requested", serving: body)
        }
        try await recordTags(tags, uri: key.uri)
        let originLength = body.length ?? response.headerFields[.contentLength].flatMap({ Int64($0) })
        // The body handed to the caller: the origin's, or the same bytes once read whole.
        var served = body
        var whole = body.bytesInMemory
        // Whether a small declared body has been read (whole, or found longer than it declared).
        var readWhole = false
        if let hook = configuration.willCache {
            // NSURLSession's `willCacheResponse` sees the data: a body small enough is read
            // whole first, so the hook can read or rewrite it.
            if whole == nil, let originLength, originLength <= Self.wholeBodyReadLimit {
                (whole, served) = try await Self.readWhole(body)
                readWhole = true
            }
            let proposal: CacheProposal?
            do {
                proposal = try await hook(CacheProposal(request: request, response: candidate.response, body: whole))
                if let proposal { try CacheProposal.validate(userInfo: proposal.userInfo) }
            } catch {
                // Nothing has been written for this response yet, so what was stored for the
                // key before is left whole: the hook's failure costs this store only.
                configuration.logger.warning(
                    "the will-cache hook failed; the response is served but not stored: \(error)",
                    metadata: ["uri": "\(key.uri)"]
                )
                return refused(
                    "not stored: the will-cache hook threw (\(error)); what was stored before is kept",
                    serving: served
                )
            }
            guard let proposal else {
                configuration.logger.debug("will-cache hook refused a response", metadata: ["uri": "\(key.uri)"])
                return refused("not stored: the will-cache hook refused it", serving: served)
            }
            switch admission(
                of: proposal,
                replacing: candidate,
                for: request,
                responseTime: responseTime,
                whole: whole
            ) {
            case .refused(let note, let detail): return refused(note, detail: detail, serving: served)
            case .admitted(let admitted): candidate = admitted
            }
        }
        if let note = sizeRefusal(of: candidate, originLength: originLength) {
            return refused(note, serving: served)
        }
        if !candidate.isMemoryOnly, let disk {
            do {
                // One statvfs: bounded, run inline. Known before the head goes out, unlike a
                // failure while a streamed body is written.
                try disk.checkRoom(forValueOfLength: candidate.replacement.map { Int64($0.count) } ?? originLength)
            } catch let error as StowageError where error.code == .noSpace {
                configuration.logger.notice(
                    "not storing a response: \(error.message)",
                    metadata: ["uri": "\(key.uri)"]
                )
                return refused("not stored: \(error.message)", detail: Self.noSpaceDetail, serving: served)
            }
        }
        let record = record(of: candidate, for: request, requestTime: requestTime, responseTime: responseTime)
        let note = storeNote(for: candidate, record: record)
        let userInfo = candidate.userInfo
        let recorder = BodyRecorder(
            cache: self,
            key: key,
            record: record,
            order: (tags, exchanged.startedAt),
            onDone: onDone
        )
        if let replacement = candidate.replacement, whole == nil {
            // The origin's body streams to the caller: the hook's bytes are stored only once it
            // has arrived whole (§3.3), not for a response whose connection drops mid-body.
            return StoreOutcome(
                body: recorder.tee(served, storingOnCompletion: replacement),
                isUnderWay: true,
                isCommitted: false,
                note: note + " (once the origin's body has been read)",
                userInfo: userInfo
            )
        }
        if candidate.replacement == nil, whole == nil, !readWhole, let originLength,
            originLength <= Self.wholeBodyReadLimit
        {
            (whole, served) = try await Self.readWhole(body)
        }
        if let bytes = candidate.replacement ?? whole {
            await recorder.append(bytes)
            let committed = await recorder.finish()
            return StoreOutcome(
                body: served,
                isUnderWay: true,
                isCommitted: committed,
                note: committed ? note : "not stored: writing it failed (see the log)",
                userInfo: committed ? userInfo : [:]
            )
        }
        return StoreOutcome(
            body: recorder.tee(served),
            isUnderWay: true,
            isCommitted: false,
            note: note + " (as the body is read)",
            userInfo: userInfo
        )
    }

    /// `body`, whose declared length is small, read whole; `whole` is `nil` when more than
    /// ``wholeBodyReadLimit`` bytes came (a fetch that undercounts, or declares a negative length):
    /// `body` is then the bytes read so far and the rest of the origin's stream, passed on and
    /// stored as a streamed body is, rather than the response failing with `bodyTooLarge`.
    static func readWhole(_ body: HTTPBody) async throws -> (whole: [UInt8]?, body: HTTPBody) {
        var iterator = body.makeAsyncIterator()
        var bytes: [UInt8] = []
        while let chunk = try await iterator.next() {
            bytes += chunk
            if bytes.count > Int(wholeBodyReadLimit) {
                let rest = RestOfBody(first: bytes, iterator: iterator)
                return (nil, HTTPBody(length: body.length) { { try await rest.next() } })
            }
        }
        return (bytes, HTTPBody(bytes: bytes))
    }
}

/// The bytes read of a body found longer than it declared, then the rest of it.
private final class RestOfBody: @unchecked Sendable {
    // Iterated by one task only (HTTPBody is single-pass), as TeeIterator.
    private var first: [UInt8]?
    private var iterator: HTTPBody.AsyncIterator

    init(first: [UInt8], iterator: HTTPBody.AsyncIterator) {
        self.first = first
        self.iterator = iterator
    }

    func next() async throws -> [UInt8]? {
        if let first {
            self.first = nil
            return first
        }
        return try await iterator.next()
    }
}
