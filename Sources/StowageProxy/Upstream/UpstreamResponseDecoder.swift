import NIOCore
import NIOHTTP1

/// Where the response being read on an upstream connection ends, shared by its
/// ``UpstreamResponseDecoder`` and its ``UpstreamExchangeHandler`` (on the connection's event
/// loop only).
final class UpstreamResponseFraming {
    /// Whether the next bytes begin a response head (an exchange is waiting for one).
    var awaitsHead = false
    /// The body bytes still to come when the head gave their number (its `Content-Length`; 0
    /// for a response without a body); `nil` when it did not (chunked, to the close) or no
    /// body is being read.
    var remainingBody: Int?
    /// Whether a body in the chunked coding is being read (its end is a line's LF).
    var readsChunkedBody = false
    /// Whether more bytes came with those the parser is being fed: set before each feed, so a
    /// response that ends in it knows whether anything followed it.
    var bytesFollow = false

    /// Between responses: no body is being read, and the next bytes begin a head when
    /// `awaitsHead` (an exchange has sent its request).
    func reset(awaitsHead: Bool) {
        self.awaitsHead = awaitsHead
        remainingBody = nil
        readsChunkedBody = false
    }

    /// The response `head` has come: its body, `length` bytes when its framing gives them, is
    /// read next.
    func beginBody(of head: HTTPResponseHead, length: Int?) {
        awaitsHead = false
        remainingBody = length
        readsChunkedBody = length == nil && head.isChunked
    }
}

extension HTTPResponseHead {
    /// Whether the body comes in the chunked coding: the last `Transfer-Encoding` is `chunked`
    /// (RFC 9112 §6.3).
    var isChunked: Bool {
        headers[canonicalForm: "transfer-encoding"].last?.lowercased() == "chunked"
    }
}

/// NIO's `HTTPResponseDecoder`, fed so that a response whose length its framing gives ends the
/// input it is given: the first head alone, then exactly the body's remaining bytes. Bytes that
/// came after a response's end, before the next request was sent, are the upstream's fault
/// (nginx: "upstream sent more data than specified in Content-Length header", and it does not
/// keep that connection): the parser would take them as the start of the next response, so
/// the connection must not carry another exchange, whose client would get them (a 502, or, when
/// they complete a response, someone else's answer). ``UpstreamResponseFraming/bytesFollow``
/// tells the exchange handler, which then closes the connection instead of reusing it.
///
/// A chunked body ends with a line's LF: a read that does not end with one is fed whole, any end
/// in it having bytes after it, and one that does is fed in two parts, all its bytes but the
/// last, then the last. A head whose end (`CRLF CRLF`) is not in the bytes at hand (split
/// between reads), and a body that runs to the close, are fed as they come, as NIO's decoder
/// alone is. A head's end split between reads is still found whole in the next: NIO's decoder
/// leaves the field it has not seen the end of in the buffer, the line's `CRLF` with it (a
/// next line that begins with a blank would continue it), so the next read's bytes follow it
/// there (`ShortBodyAttackTests.bytesAfterAHeadSplitAtItsEnd` splits it after each of its first three bytes).
struct UpstreamResponseDecoder: WriteObservingByteToMessageDecoder {
    typealias InboundOut = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart

    private let decoder: HTTPResponseDecoder
    private let framing: UpstreamResponseFraming

    init(_ decoder: HTTPResponseDecoder, framing: UpstreamResponseFraming) {
        self.decoder = decoder
        self.framing = framing
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        while buffer.readableBytes > 0 {
            if framing.readsChunkedBody {
                try decodeChunked(context: context, buffer: &buffer)
                break
            }
            let available = buffer.readableBytes
            var count = available
            if let remaining = framing.remainingBody, remaining > 0 {
                count = min(remaining, available)
            } else if framing.awaitsHead, let end = Self.headEnd(in: buffer) {
                count = end
            }
            framing.bytesFollow = count < available
            var part = buffer.getSlice(at: buffer.readerIndex, length: count)!
            _ = try decoder.decode(context: context, buffer: &part)
            let consumed = count - part.readableBytes
            buffer.moveReaderIndex(forwardBy: consumed)
            // The parser keeps a field it has not seen the end of: it needs the next read.
            if consumed < count || count == available { break }
        }
        framing.bytesFollow = false
        return .needMoreData
    }

    /// Feeds all of `buffer`, in a chunked body: see the type's description.
    private func decodeChunked(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws {
        let available = buffer.readableBytes
        let last = buffer.getInteger(at: buffer.readerIndex + available - 1, as: UInt8.self)
        defer { framing.bytesFollow = false }
        guard last == 0x0A, available > 1 else {
            framing.bytesFollow = last != 0x0A
            _ = try decoder.decode(context: context, buffer: &buffer)
            return
        }
        framing.bytesFollow = true
        var allButLast = buffer.getSlice(at: buffer.readerIndex, length: available - 1)!
        _ = try decoder.decode(context: context, buffer: &allButLast)
        // What the parser kept (a field it has not seen the end of) goes again with the last byte.
        buffer.moveReaderIndex(forwardBy: available - 1 - allButLast.readableBytes)
        framing.bytesFollow = false
        _ = try decoder.decode(context: context, buffer: &buffer)
    }

    mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        try decoder.decodeLast(context: context, buffer: &buffer, seenEOF: seenEOF)
    }

    mutating func decoderAdded(context: ChannelHandlerContext) {
        decoder.decoderAdded(context: context)
    }

    mutating func decoderRemoved(context: ChannelHandlerContext) {
        decoder.decoderRemoved(context: context)
    }

    mutating func write(data: HTTPClientRequestPart) {
        decoder.write(data: data)
    }

    /// The length of the bytes up to and including the first `CRLF CRLF` in `buffer`: the end of
    /// the head they begin with (RFC 9112 §2.1); `nil` when it is not there yet.
    static func headEnd(in buffer: ByteBuffer) -> Int? {
        buffer.withUnsafeReadableBytes { bytes -> Int? in
            var index = 3
            while index < bytes.count {
                // Checked from the last byte: a byte that is not LF moves on at once.
                if bytes[index] == 0x0A, bytes[index - 1] == 0x0D, bytes[index - 2] == 0x0A, bytes[index - 3] == 0x0D {
                    return index + 1
                }
                index += 1
            }
            return nil
        }
    }
}
