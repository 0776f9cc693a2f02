import Foundation
import NIOCore
import NIOPosix

/// One HTTP/1.1 request written by hand to a server on loopback, and its response as read off
/// the socket: for request forms no client library sends, such as an absolute-form target
/// (`GET http://a.example/x HTTP/1.1`, RFC 9112 §3.2.2) with a `Host` naming another host.
struct RawHTTPExchange {
    /// The response's status code.
    var status: Int
    /// The response's header fields, names lowercased, in order.
    var fields: [(name: String, value: String)]
    /// The response's body as text.
    var body: String

    /// The first value of the field `name` (any case), `nil` without one.
    func value(of name: String) -> String? {
        fields.first { $0.name == name.lowercased() }?.value
    }

    /// Whether the response says the cache answered it from what it had stored.
    var isHit: Bool { value(of: "Cache-Status")?.contains("; hit") ?? false }

    /// Sends `head` (the request line and fields, each line ended by CRLF, without the empty
    /// line that ends the head; `Connection: close` is added) to 127.0.0.1:`port` and reads the
    /// response to the end of the connection.
    static func send(_ head: [String], toPort port: Int) async throws -> RawHTTPExchange {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let text = try await channel.executeThenClose { inbound, outbound in
            let request = (head + ["Connection: close", "", ""]).joined(separator: "\r\n")
            try await outbound.write(ByteBuffer(string: request))
            var received = ByteBuffer()
            for try await chunk in inbound { received.writeImmutableBuffer(chunk) }
            return String(buffer: received)
        }
        return try RawHTTPExchange(parsing: text)
    }

    /// The response in `text`: a status line, fields, an empty line, a body (sent whole, with
    /// `Content-Length`, as the routes under test answer).
    init(parsing text: String) throws {
        guard let headEnd = text.range(of: "\r\n\r\n") else { throw UnreadableResponse(text: text) }
        var lines = text[..<headEnd.lowerBound].components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw UnreadableResponse(text: text) }
        self.status = status
        fields = lines.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (
                line[..<colon].lowercased(),
                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            )
        }
        body = String(text[headEnd.upperBound...])
    }

    /// What a test reports when the server's answer is not an HTTP/1.1 response.
    struct UnreadableResponse: Error, CustomStringConvertible {
        var text: String
        var description: String { "not an HTTP/1.1 response: \(text.debugDescription)" }
    }
}
