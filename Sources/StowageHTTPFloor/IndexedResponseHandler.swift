import NIOCore
import NIOHTTP1

/// Answers requests whose path ``IndexedResponses`` covers with the bytes its table holds for
/// that path (one `SELECT` on the event loop, written past any response encoder, as
/// ``RawCapturedResponseHandler`` writes), and every other request with the captured responses
/// in memory; 404 when neither has one. Flushes once per read.
final class IndexedResponseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = IOData

    private let index: IndexedResponses
    private let table: CapturedResponses
    private var current: ByteBuffer?
    private var keepAlive = true
    private static let notFound = ByteBuffer(string: "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")

    init(index: IndexedResponses, table: CapturedResponses) {
        self.index = index
        self.table = table
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            let path = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            if index.answers(path) {
                current = index.reader(for: context.eventLoop)?.response(forKey: String(path))
            } else {
                current = table.response(for: request.uri)?.bytes
            }
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
