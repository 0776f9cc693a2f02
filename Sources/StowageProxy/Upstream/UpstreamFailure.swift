import StowageCore

/// Why an upstream exchange failed, carried as the `cause` of the `StowageError` the
/// ``UpstreamClient`` throws: the proxy answers ``isTimeout`` failures 504 and the rest 502.
enum UpstreamFailure: Error, Sendable, Equatable {
    /// The connection was refused, or the address does not resolve.
    case cannotConnect
    /// The connection did not open within the connect timeout.
    case connectTimeout
    /// The response head did not arrive before the request's deadline.
    case deadlineExceeded
    /// The upstream stayed silent longer than the read timeout.
    case readTimeout
    /// The connection closed before any part of a response arrived: an idempotent request may
    /// be sent again (RFC 9112 §9.3.1).
    case closedBeforeResponse
    /// The connection closed during a response, or the response does not parse.
    case brokenResponse
    /// The upstream sent more interim responses than the client takes.
    case tooManyInterimResponses
    /// The upstream switched protocols (101) though the proxy asked for no upgrade.
    case unexpectedUpgrade

    /// Whether the failure is a deadline (504 Gateway Timeout) rather than a bad answer (502).
    var isTimeout: Bool { [.connectTimeout, .deadlineExceeded, .readTimeout].contains(self) }
}

extension StowageError {
    /// An upstream exchange that failed with `failure`, for `origin`: what happened and what to do.
    static func upstream(_ failure: UpstreamFailure, origin: String, underlying: (any Error)? = nil) -> Self {
        let (code, what): (Code, String) =
            switch failure {
            case .cannotConnect:
                (.unreachable, "cannot be connected to; check it is up and listening")
            case .connectTimeout:
                (.unreachable, "did not accept a connection within the connect timeout; check it is up and reachable")
            case .deadlineExceeded:
                (.unreachable, "did not answer within the upstream timeout; raise upstreamTimeout if it is slow")
            case .readTimeout:
                (.unreachable, "stayed silent longer than the upstream timeout; raise upstreamTimeout if it is slow")
            case .closedBeforeResponse:
                (.unreachable, "closed the connection before answering; check its logs")
            case .brokenResponse:
                (.malformed, "sent a response that does not parse or ended it early; check its logs")
            case .tooManyInterimResponses:
                (.malformed, "sent interim (1xx) responses without end; check its configuration")
            case .unexpectedUpgrade:
                (.malformed, "switched protocols (101) though no upgrade was asked for; it cannot be proxied")
            }
        let detail = underlying.map { " (\($0))" } ?? ""
        return StowageError(code: code, message: "the upstream \(origin) \(what)\(detail)", cause: failure)
    }

    /// The ``UpstreamFailure`` this error carries, if it came from the ``UpstreamClient``.
    var upstreamFailure: UpstreamFailure? { cause as? UpstreamFailure }
}
