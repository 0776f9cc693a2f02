import NIOCore
import NIOHTTP1
import StowageHTTPCache

/// A hit's HTTP/1 response as the bytes that go on the wire: its head, encoded as NIO's
/// `HTTPResponseEncoder` encodes it, followed by its body, so answering the same request again is
/// one write of a shared buffer — the way Varnish keeps an object's response ready to send.
///
/// Written past the encoder (``OutboundByteCounter/writeEncoded(_:)``): the response is framed
/// here, by `Content-Length`, since a hit's body length is known.
struct EncodedResponse: Sendable {
    /// The head and, when the body is at most ``inlineBodyLimit`` bytes, the body after it.
    let bytes: ByteBuffer
    /// The body when it is larger than ``inlineBodyLimit``: written as a second buffer, shared
    /// with the cache, rather than copied behind the head.
    let separateBody: ByteBuffer?
    /// The length of the head in ``bytes``.
    let headLength: Int

    /// The largest body copied behind the head: a copy per refresh of the head (once a second
    /// at most), where a second buffer would cost a second I/O vector on every hit.
    static let inlineBodyLimit = 16 << 10

    /// Encodes `head` (already framed, ``framed(_:bodyLength:)``) and `body`.
    init(head: HTTPResponseHead, body: ByteBuffer) {
        var bytes = ByteBuffer()
        let inline = body.readableBytes <= Self.inlineBodyLimit
        bytes.reserveCapacity(Self.estimatedHeadLength(head) + (inline ? body.readableBytes : 0))
        Self.write(head, to: &bytes)
        headLength = bytes.readableBytes
        if inline {
            var body = body
            bytes.writeBuffer(&body)
            separateBody = nil
        } else {
            separateBody = body
        }
        self.bytes = bytes
    }

    /// A response already encoded: `bytes` holds its head (`headLength` bytes) and its body.
    init(encoded bytes: ByteBuffer, headLength: Int) {
        precondition(
            headLength >= 0 && headLength <= bytes.readableBytes,
            "a head of \(headLength) bytes is not in the response"
        )
        self.bytes = bytes
        self.headLength = headLength
        separateBody = nil
    }

    /// The body: the bytes after the head, or the separate buffer (a view, not a copy).
    var body: ByteBuffer {
        separateBody ?? bytes.getSlice(at: bytes.readerIndex + headLength, length: bytes.readableBytes - headLength)!
    }

    /// The length of the body.
    var bodyLength: Int { byteCount - headLength }

    /// The bytes held: head and body.
    var byteCount: Int { bytes.readableBytes + (separateBody?.readableBytes ?? 0) }

    /// The heap of its buffers (``HeapBytes``): each a storage object of NIO's (its capacity, its
    /// pointer and its allocator's four functions) and the bytes it allocated.
    var heapBytes: Int {
        func buffer(_ buffer: ByteBuffer) -> Int {
            HeapBytes.object(storedBytes: 48) + HeapBytes.allocation(buffer.capacity)
        }
        return buffer(bytes) + (separateBody.map(buffer) ?? 0)
    }

    /// `head` framed for a body of `bodyLength` bytes as NIO's encoder frames a response that
    /// states its length: `Content-Length` (added when missing), no `Transfer-Encoding`.
    static func framed(_ head: HTTPResponseHead, bodyLength: Int) -> HTTPResponseHead {
        var head = head
        if !head.headers.contains(name: "content-length") {
            head.headers.add(name: "Content-Length", value: String(bodyLength))
        }
        if head.headers.contains(name: "transfer-encoding") { head.headers.remove(name: "transfer-encoding") }
        return head
    }

    /// Writes `head` as NIO's HTTP/1 encoder does: the status line (`HTTP/1.1 200 OK`), each
    /// field as `name: value`, and the empty line.
    static func write(_ head: HTTPResponseHead, to buffer: inout ByteBuffer) {
        buffer.writeString("HTTP/\(head.version.major).\(head.version.minor) \(head.status.code) ")
        buffer.writeString(head.status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        for (name, value) in head.headers {
            buffer.writeString(name)
            buffer.writeStaticString(": ")
            buffer.writeString(value)
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("\r\n")
    }

    private static func estimatedHeadLength(_ head: HTTPResponseHead) -> Int {
        head.headers.reduce(64) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }
}
