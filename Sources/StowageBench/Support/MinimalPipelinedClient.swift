import NIOCore
import NIOPosix

/// The least a Swift client on SwiftNIO does for the pipelined shared-tier rows, as a floor for
/// `RedisClient.pipeline` on the same machine: callers are Swift tasks on the global executor
/// (as the scenario's are), each pipeline is encoded into one buffer by its caller, handed to
/// the connection's event loop, written with the flushes of concurrent callers coalesced, and
/// its replies framed straight from the socket's bytes and handed back through one continuation.
/// No pool, no timeouts, no pushes, no error replies, no RESP3, no metrics: only the work every
/// such client must do, so what `RedisClient` costs above it is its own.
final class MinimalPipelinedClient: Sendable {
    private let channels: [any Channel]
    private let handlers: [NIOLoopBound<MinimalPipelineHandler>]

    private init(channels: [any Channel], handlers: [NIOLoopBound<MinimalPipelineHandler>]) {
        self.channels = channels
        self.handlers = handlers
    }

    /// `connections` connections to `host:port` on `group`'s event loops, round robin.
    static func connect(
        host: String,
        port: Int,
        connections: Int,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> MinimalPipelinedClient {
        var channels: [any Channel] = []
        var handlers: [NIOLoopBound<MinimalPipelineHandler>] = []
        for _ in 0..<connections {
            let channel = try await ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(MinimalPipelineHandler())
                    }
                }
                .connect(host: host, port: port).get()
            let handler = try await channel.eventLoop.submit {
                NIOLoopBound(
                    try channel.pipeline.syncOperations.handler(type: MinimalPipelineHandler.self),
                    eventLoop: channel.eventLoop
                )
            }.get()
            channels.append(channel)
            handlers.append(handler)
        }
        return MinimalPipelinedClient(channels: channels, handlers: handlers)
    }

    /// Sends the `count` commands already encoded in `request` on connection `index` and returns
    /// their replies' payloads (a bulk string's bytes, a simple string's text; nil for null).
    func pipeline(_ request: ByteBuffer, count: Int, on index: Int) async throws -> [ByteBuffer?] {
        let handler = handlers[index % handlers.count]
        let eventLoop = channels[index % channels.count].eventLoop
        return try await withUnsafeThrowingContinuation { continuation in
            if eventLoop.inEventLoop {
                handler.value.send(request, count: count, continuation: continuation)
            } else {
                eventLoop.execute { handler.value.send(request, count: count, continuation: continuation) }
            }
        }
    }

    func close() async {
        for channel in channels { try? await channel.close() }
    }
}

private struct MinimalProtocolError: Error {}

final class MinimalPipelineHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var waiting = CircularBuffer<(UnsafeContinuation<[ByteBuffer?], any Error>, Int)>()
    private var replies: [ByteBuffer?] = []
    private var partial: ByteBuffer?
    private var context: ChannelHandlerContext?
    private var isFlushScheduled = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        while let (continuation, _) = waiting.popFirst() { continuation.resume(throwing: MinimalProtocolError()) }
    }

    func send(_ request: ByteBuffer, count: Int, continuation: UnsafeContinuation<[ByteBuffer?], any Error>) {
        guard let context else { return continuation.resume(throwing: MinimalProtocolError()) }
        waiting.append((continuation, count))
        context.write(wrapOutboundOut(request), promise: nil)
        if isFlushScheduled { return }
        isFlushScheduled = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = loopBound.value
            handler.isFlushScheduled = false
            context.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if var carried = partial {
            // Complete the reply cut by the last read with as few of the new bytes as it needs
            // (doubling chunks), then frame the rest in place, as RedisChannelHandler does.
            partial = nil
            var appended = 0
            var chunk = max(512, carried.readableBytes)
            while carried.readableBytes > appended {
                guard bytes.readableBytes > 0 else {
                    partial = carried.slice()
                    return
                }
                var slice = bytes.readSlice(length: min(chunk, bytes.readableBytes))!
                appended += slice.readableBytes
                carried.writeBuffer(&slice)
                chunk = max(chunk * 2, carried.readableBytes)
                while carried.readableBytes > appended, let reply = Self.frame(&carried) { deliver(reply) }
            }
            bytes.moveReaderIndex(to: bytes.readerIndex - carried.readableBytes)
        }
        while let reply = Self.frame(&bytes) { deliver(reply) }
        if bytes.readableBytes > 0 { partial = bytes.slice() }
    }

    private func deliver(_ reply: ByteBuffer?) {
        guard let (continuation, count) = waiting.first else { return }
        if replies.isEmpty { replies.reserveCapacity(count) }
        replies.append(reply)
        if replies.count == count {
            waiting.removeFirst()
            let batch = replies
            replies = []
            continuation.resume(returning: batch)
        }
    }

    /// One `+text`, `$len`/`$-1` or `_` reply; nil (consuming nothing) until it has fully arrived.
    private static func frame(_ buffer: inout ByteBuffer) -> ByteBuffer?? {
        let header: (marker: UInt8, number: Int, length: Int)? = buffer.withUnsafeReadableBytes { bytes in
            guard let cr = bytes.firstIndex(of: UInt8(ascii: "\r")), cr + 1 < bytes.count, cr > 0 else { return nil }
            var number = 0
            var isNegative = false
            for byte in bytes[1..<cr] {
                if byte == UInt8(ascii: "-") { isNegative = true } else { number = number * 10 + Int(byte &- 48) }
            }
            return (bytes[0], isNegative ? -number : number, cr + 2)
        }
        guard let header else { return nil }
        switch header.marker {
        case UInt8(ascii: "$"):
            if header.number < 0 {
                buffer.moveReaderIndex(forwardBy: header.length)
                return .some(nil)
            }
            guard buffer.readableBytes >= header.length + header.number + 2 else { return nil }
            buffer.moveReaderIndex(forwardBy: header.length)
            let payload = buffer.readSlice(length: header.number)
            buffer.moveReaderIndex(forwardBy: 2)
            return .some(payload)
        default:
            let text = buffer.getSlice(at: buffer.readerIndex + 1, length: header.length - 3)
            buffer.moveReaderIndex(forwardBy: header.length)
            return .some(text)
        }
    }
}
