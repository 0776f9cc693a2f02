import NIOCore
import NIOHTTP1

/// Answers each request with its captured response, 404 when there is none; flushes once per
/// read, so pipelined requests leave in one write, as NIO's own HTTP examples do.
final class CapturedResponseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let table: CapturedResponses
    private var current: CapturedResponse?
    private var keepAlive = true
    private static let notFound = HTTPResponseHead(
        version: .http1_1,
        status: .notFound,
        headers: ["content-length": "0"]
    )

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
            if let current {
                context.write(wrapOutboundOut(.head(current.head)), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(current.body))), promise: nil)
            } else {
                context.write(wrapOutboundOut(.head(Self.notFound)), promise: nil)
            }
            if keepAlive {
                context.write(wrapOutboundOut(.end(nil)), promise: nil)
            } else {
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }
}
