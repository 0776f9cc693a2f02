import Foundation
import HTTPTypes

extension CacheRules {
    /// §4.3.1: the request to send to validate `stored`: `request` with the stored responses'
    /// entity tags in `If-None-Match` and, for a single response, its `Last-Modified` in
    /// `If-Modified-Since`. Conditions the client had are replaced by the cache's own (§4.3.2
    /// then answers the client from the validated response).
    public func conditionalRequest(for request: HTTPRequest, validating stored: [StoredResponse]) -> HTTPRequest {
        var conditional = request
        conditional.method = .get  // a HEAD is validated through the stored GET (§4.3.5 aside)
        conditional.headerFields[.ifNoneMatch] = nil
        conditional.headerFields[.ifModifiedSince] = nil
        conditional.headerFields[.ifMatch] = nil
        conditional.headerFields[.ifUnmodifiedSince] = nil
        conditional.headerFields[.ifRange] = nil
        let tags = stored.compactMap(\.entityTag)
        if !tags.isEmpty { conditional.headerFields[.ifNoneMatch] = tags.map(\.description).joined(separator: ", ") }
        if stored.count == 1, let lastModified = stored[0].response.headerFields[.lastModified],
            HTTPDate.parse(lastModified, nowSeconds: stored[0].responseSeconds) != nil
        {
            conditional.headerFields[.ifModifiedSince] = lastModified
        }
        return conditional
    }

    /// Whether the request carries conditions of its own (`If-None-Match`, `If-Modified-Since`).
    public static func isConditional(_ request: HTTPRequest) -> Bool {
        request.headerFields[.ifNoneMatch] != nil || request.headerFields[.ifModifiedSince] != nil
    }

    /// §4.3.2: whether a client's conditional GET or HEAD is satisfied by `stored` (answer 304).
    ///
    /// `If-None-Match` takes precedence and uses weak comparison (RFC 9110 §13.1.2); without it,
    /// `If-Modified-Since` compares with `Last-Modified` (or `Date`) (§13.1.3).
    ///
    /// - Parameters:
    ///   - request: The client's request, with its conditions.
    ///   - stored: The stored response the conditions are checked against.
    ///   - now: When the request was received (an RFC 850 `If-Modified-Since`'s century,
    ///     RFC 9110 §5.6.7); the cache passes its clock's time. Default: the system's date.
    public func conditionsMatch(_ request: HTTPRequest, stored: StoredResponse, now: Date = Date()) -> Bool {
        conditionsMatch(request, stored: stored, nowSeconds: now.timeIntervalSince1970)
    }

    /// ``conditionsMatch(_:stored:now:)`` with `now` in seconds since 1970, as the cache counts time.
    func conditionsMatch(_ request: HTTPRequest, stored: StoredResponse, nowSeconds: Double) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let fields = request.headerFields
        if let ifNoneMatch = fields.combined(.ifNoneMatch) {
            let candidates = EntityTag.parseList(ifNoneMatch)
            guard let tag = stored.entityTag else { return candidates.contains { $0 == nil } }
            return candidates.contains { $0 == nil || $0!.matchesWeakly(tag) }
        }
        if let since = fields[.ifModifiedSince], let sinceDate = HTTPDate.parse(since, nowSeconds: nowSeconds) {
            guard let modified = stored.lastModified ?? stored.facts.date else { return false }
            return modified <= sinceDate
        }
        return false
    }

    /// §4.3.4: which of `stored` a 304 `notModified` refreshes, by index.
    ///
    /// A strong entity tag selects the responses with the same strong tag; a weak tag or a
    /// `Last-Modified` selects the most recent matching one; a 304 without validators selects
    /// the single stored response when it was the one validated.
    ///
    /// - Parameters:
    ///   - stored: The stored responses of the URL.
    ///   - notModified: The 304 that validated one of them.
    ///   - now: When the 304 was received (an RFC 850 `Last-Modified`'s century, RFC 9110
    ///     §5.6.7); the cache passes its clock's time. Default: the system's date.
    public func responsesToFreshen(
        _ stored: [StoredResponse],
        with notModified: HTTPResponse,
        now: Date = Date()
    ) -> [Int] {
        responsesToFreshen(stored, with: notModified, nowSeconds: now.timeIntervalSince1970)
    }

    /// ``responsesToFreshen(_:with:now:)`` with `now` in seconds since 1970, as the cache counts time.
    func responsesToFreshen(_ stored: [StoredResponse], with notModified: HTTPResponse, nowSeconds: Double) -> [Int] {
        let fields = notModified.headerFields
        if let tag = fields[.eTag].flatMap({ EntityTag(parsing: $0) }) {
            if !tag.isWeak {
                return stored.indices.filter { stored[$0].entityTag.map { $0.matchesStrongly(tag) } ?? false }
            }
            return mostRecent(
                stored.indices.filter { stored[$0].entityTag.map { $0.matchesWeakly(tag) } ?? false },
                of: stored
            )
        }
        if let lastModified = fields.date(.lastModified, now: nowSeconds).value {
            return mostRecent(stored.indices.filter { stored[$0].lastModified == lastModified }, of: stored)
        }
        return stored.count == 1 ? [0] : []
    }

    private func mostRecent(_ indices: [Int], of stored: [StoredResponse]) -> [Int] {
        guard let best = indices.max(by: { stored[$0].responseSeconds < stored[$1].responseSeconds }) else { return [] }
        return [best]
    }

    /// §4.3.4 / §3.2: `stored` with the header fields of `notModified`, which replace the stored
    /// fields of the same names, except `Content-Length` and hop-by-hop fields; the exchange
    /// times become those of the validation.
    public func freshen(
        _ stored: StoredResponse,
        with notModified: HTTPResponse,
        requestTime: Date,
        responseTime: Date
    ) -> StoredResponse {
        freshen(
            stored,
            with: notModified,
            requestTime: requestTime.timeIntervalSince1970,
            responseTime: responseTime.timeIntervalSince1970
        )
    }

    /// ``freshen(_:with:requestTime:responseTime:)`` with the times in seconds since 1970.
    func freshen(
        _ stored: StoredResponse,
        with notModified: HTTPResponse,
        requestTime: Double,
        responseTime: Double
    ) -> StoredResponse {
        var updated = stored
        var fields = stored.response.headerFields
        let incoming = fieldsToStore(notModified.headerFields, responseTime: responseTime)
        var replaced = Set<HTTPField.Name>()
        for field in incoming where field.name != .contentLength {
            if replaced.insert(field.name).inserted { fields[values: field.name] = [] }
            fields.append(field)
        }
        updated.response.headerFields = fields
        updated.requestSeconds = requestTime
        updated.responseSeconds = responseTime
        return updated
    }
}
