import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Writes the upstream's interim responses (1xx) to the client whose request went upstream,
/// ahead of the final response: a proxy forwards them (RFC 9110 §15.2), as nginx does `103
/// Early Hints`.
///
/// The responder closes it once the request's response is ready, so a fetch that outlives its
/// request (a background revalidation, `stale-while-revalidate`) writes none into a later
/// exchange. Only the request whose fetch goes upstream forwards: a request collapsed onto
/// another's fetch never calls its own. ``ConnectionTimingHandler`` drops what reaches an
/// HTTP/1.0 client (§15.2: a 1.0 client does not take them) or follows the final head.
///
/// Writes go straight to the client's channel, as `ResponseWriter.writeInformationalHead(_:)`
/// does through its writer: the response writer belongs to the responder's task, and the
/// interim arrives on the upstream connection's event loop while that task waits for the
/// fetch. They are enqueued before the fetch returns, so before the final head.
final class InterimForwarder: Sendable {
    private let channel: any Channel
    private let isOpen = Atomic<Bool>(true)

    init(channel: any Channel) {
        self.channel = channel
    }

    /// Writes `response` to the client, unless it is not interim, is a 101 (no upgrade goes
    /// through a cache), or the request's response is already under way.
    func forward(_ response: HTTPResponse) {
        let code = response.status.code
        guard (100..<200).contains(code), code != 101, isOpen.load(ordering: .acquiring) else { return }
        var interim = response
        for name in ProxyHandler.hopByHop { interim.headerFields[values: name] = [] }
        channel.writeAndFlush(HTTPResponsePart.head(interim), promise: nil)
    }

    /// Forwards nothing more.
    func close() {
        isOpen.store(false, ordering: .releasing)
    }
}
