import NIOCore
import NIOHTTP1

/// Answers each request with the bytes its lookup gives for it, written past any response
/// encoder (`--raw`: the captured responses in memory; `--index-prefix`: also an SQLite table,
/// ``IndexedResponses``); 404 when there are none. Flushes once per read, as
/// ``CapturedResponseHandler`` does.
final class RawCapturedResponseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = IOData

    /// The bytes to write for a request, looked up on the channel's event loop.
    typealias Lookup = (HTTPRequestHead, any EventLoop) -> ByteBuffer?

    private let lookup: Lookup
    private var current: ByteBuffer?
    private var keepAlive = true
    private static let notFound = ByteBuffer(string: "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")

    init(lookup: @escaping Lookup) {
        self.lookup = lookup
    }

    /// The captured responses of `table`.
    convenience init(table: CapturedResponses) {
        self.init { request, _ in table.response(for: request.uri)?.bytes }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            current = lookup(request, context.eventLoop)
            keepAlive = request.isKeepAlive
        case .body:
            break
        case .end:
            let bytes = current ?? Self.notFound
            current = nil
            if keepAlive {
                context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: nil)
            } else {
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.byteBuffer(bytes))).whenComplete { _ in
                    channel.close(promise: nil)
                }
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }
}
