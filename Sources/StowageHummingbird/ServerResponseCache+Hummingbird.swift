import HTTPTypes
import Hummingbird
import NIOCore
import StowageHTTPCache

extension ServerResponseCache {
    /// The response to `request`: from the cache, or from `handler` (the origin), stored when
    /// it may be; `handler` alone for requests the cache leaves alone.
    func response<Context: Sendable>(
        to request: Request,
        context: Context,
        handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) async throws -> Response {
        let hasBody = request.head.method != .get && request.head.method != .head
        let body = hasBody ? HTTPBody(request.body.map { Array(buffer: $0) }) : nil
        let answer = try await respond(to: request.head, body: body) { head, body in
            let requestBody = body.map { body in RequestBody(asyncSequence: body.map { ByteBuffer(bytes: $0) }) }
            let response = try await handler(
                Request(head: head, body: requestBody ?? RequestBody(buffer: ByteBuffer())),
                context
            )
            return Self.origin(response)
        }
        guard let answer else { return try await handler(request, context) }
        return Self.response(answering: answer)
    }

    /// A handler's response as the cache's origin response: its head (with `Content-Length`
    /// when the body knows it) and its body, written by the handler's body writer as the cache
    /// reads it.
    static func origin(_ response: Response) -> (HTTPResponse, HTTPBody) {
        var head = response.head
        let responseBody = response.body
        if let length = responseBody.contentLength, head.headerFields[.contentLength] == nil {
            head.headerFields[.contentLength] = String(length)
        }
        let body = HTTPBody(length: responseBody.contentLength.map(Int64.init)) { writer in
            try await responseBody.write(HTTPBodyResponseWriter(writer: writer))
        }
        return (head, body)
    }

    /// The Hummingbird response for the cache's answer, its body streamed when not in memory.
    static func response(answering answer: Answer) -> Response {
        let body: ResponseBody
        if let answerBody = answer.body {
            if let bytes = answerBody.bytesInMemory {
                body = ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
            } else {
                body = ResponseBody(asyncSequence: answerBody.map { ByteBuffer(bytes: $0) })
            }
        } else {
            body = ResponseBody()
        }
        return Response(status: answer.head.status, headers: answer.head.headerFields, body: body)
    }
}

/// Hands a Hummingbird response body's buffers to the cache's ``HTTPBody`` reader.
struct HTTPBodyResponseWriter: ResponseBodyWriter {
    let writer: HTTPBody.Writer

    mutating func write(_ buffer: ByteBuffer) async throws {
        try await writer.write(Array(buffer: buffer))
    }

    // Trailer fields are dropped: HTTPCache stores a head and a body.
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
