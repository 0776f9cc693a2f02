import NIOCore

/// Counts the bytes written toward the socket, after the HTTP/1 encoder: every head, chunk
/// frame and body byte the connection queues, so ``ConnectionTimingHandler``'s send deadline
/// can tell how many have left the channel's buffer (``sent(context:)``). Event-loop bound.
final class OutboundByteCounter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// Every byte written through this handler on this connection.
    private(set) var queued: Int64 = 0
    /// Its place in the pipeline, for ``writeEncoded(_:)``; set while it is in one.
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Writes the bytes of an encoded response (``EncodedResponse``) toward the socket, past the
    /// HTTP/1 encoder, counted as every other write is.
    func writeEncoded(_ bytes: ByteBuffer) {
        guard let context else { return }
        queued += Int64(bytes.readableBytes)
        context.write(NIOAny(IOData.byteBuffer(bytes)), promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        queued += Int64(unwrapOutboundIn(data).readableBytes)
        context.write(data, promise: promise)
    }

    /// The bytes queued that have left the channel's buffer for the kernel; `nil` when the
    /// channel cannot tell.
    func sent(context: ChannelHandlerContext) -> Int64? {
        guard let buffered = try? context.channel.syncOptions?.getOption(.bufferedWritableBytes) else { return nil }
        return queued - Int64(buffered)
    }
}
