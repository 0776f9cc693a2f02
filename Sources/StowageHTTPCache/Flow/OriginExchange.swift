import HTTPTypes
import Tracing

/// A response from the origin with the two readings of the cache's clock that RFC 9111 §4.2.3
/// ages it by: when the request went out and when the response came back.
struct OriginExchange {
    /// The origin's response head.
    var response: HTTPResponse
    /// Its body, not read yet.
    var body: HTTPBody
    /// Seconds since 1970 when the request was sent (`request_time`).
    var requestTime: Double
    /// Seconds since 1970 when the response arrived (`response_time`).
    var responseTime: Double
    /// The invalidations begun before the request was sent (``InvalidationOrder/current``): one
    /// begun after it that covers the response keeps it from being stored.
    var startedAt: UInt64
}

extension HTTPCache {
    /// Sends `request` (no body) through `fetch`, reading the cache's clock before and after.
    func exchange(_ request: HTTPRequest, through fetch: HTTPFetch) async throws -> OriginExchange {
        let startedAt = invalidations.current
        let requestTime = now
        let (response, body) = try await fetchTraced(request, body: nil, through: fetch)
        return OriginExchange(
            response: response,
            body: body,
            requestTime: requestTime,
            responseTime: now,
            startedAt: startedAt
        )
    }
}
