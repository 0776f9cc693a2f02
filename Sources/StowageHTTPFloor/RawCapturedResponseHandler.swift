import NIOCore
import NIOHTTP1

/// Answers each request with its captured response written as the captured bytes, past any
/// response encoder (`--raw`); 404 when there is none. Flushes once per read, as
/// ``CapturedResponseHandler`` does.
final class RawCapturedResponseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = IOData

    private let table: CapturedResponses
    private var current: CapturedResponse?
    private var keepAlive = true
    private static let notFound = ByteBuffer(string: "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")

    init(table: CapturedResponses) {
        self.table = table
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            current = table.response(for: request.uri)
            keepAlive = request.isKeepAlive
        case .body:
            break
        case .end:
            let bytes = current?.bytes ?? Self.notFound
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
