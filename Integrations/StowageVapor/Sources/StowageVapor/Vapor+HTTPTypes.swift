import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import Vapor

extension HTTPHeaders {
    /// These fields as swift-http-types fields, in order, each value kept (names that are not
    /// valid tokens are dropped; NIO's parser lets none through).
    var httpFields: HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(count)
        for (name, value) in self {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        return fields
    }

    /// `fields` as NIO's headers, in order, each value kept.
    init(_ fields: HTTPFields) {
        self.init()
        reserveCapacity(fields.count)
        for field in fields { add(name: field.name.rawName, value: field.value) }
    }
}

extension Request {
    /// The request head as swift-http-types has it: the first `Host` becomes the authority and
    /// any other stays in the fields (as NIOHTTPTypesHTTP1 does for HTTP/1, so the cache can
    /// leave such a request alone), the scheme is left unset.
    var httpRequest: HTTPRequest {
        var fields = headers.httpFields
        let hostName = HTTPField.Name("Host")!
        let hosts = fields[values: hostName]
        fields[values: hostName] = Array(hosts.dropFirst())
        let target = url.string
        let path = target.hasPrefix("/") || target == "*" ? target : (url.path + (url.query.map { "?" + $0 } ?? ""))
        return HTTPRequest(
            method: HTTPRequest.Method(method.rawValue) ?? .get,
            scheme: nil,
            authority: hosts.first,
            path: path.isEmpty ? "/" : path,
            headerFields: fields
        )
    }

    /// A request without a body, for the head the cache sends to the origin, with this
    /// request's route parameters, address and logger.
    func forwarding(_ head: HTTPRequest) -> Request {
        var headers = HTTPHeaders(head.headerFields)
        if let authority = head.authority { headers.replaceOrAdd(name: .host, value: authority) }
        let forwarded = Request(
            application: application,
            method: HTTPMethod(rawValue: head.method.rawValue),
            url: URI(string: head.path ?? "/"),
            version: version,
            headersNoUpdate: headers,
            collectedBody: nil,
            remoteAddress: remoteAddress,
            logger: logger,
            byteBufferAllocator: byteBufferAllocator,
            on: eventLoop
        )
        forwarded.parameters = parameters
        return forwarded
    }
}

extension HTTPFields {
    /// These fields as NIO's headers without `Date`: Vapor's `HTTPServerResponseEncoder` adds
    /// its own `date` to every response it writes, whatever the response has, and RFC 9110
    /// §6.6.1 allows one. The one sent is then Vapor's, the time of sending; the stored
    /// response's age goes in `Age` (RFC 9111 §4), which a downstream cache adds to its own
    /// count (RFC 9111 §4.2.3), as nginx serves its cache hits with its own `Date`.
    var leavingDateToVapor: HTTPHeaders {
        var fields = self
        fields[.date] = nil
        return HTTPHeaders(fields)
    }
}

extension Response {
    /// This response as the cache's origin response: its head (with `Content-Length` when
    /// the body's size is known) and its body.
    ///
    /// - Throws: `StowageError` `.invalidArgument` for a status code outside 100...999, which
    ///   swift-http-types cannot hold (its initializer would stop the process).
    func originResponse(on eventLoop: any EventLoop) async throws -> (HTTPResponse, HTTPBody) {
        // RFC 9110 §15: a status code is three digits; Vapor's `.custom` takes any number.
        guard (100...999).contains(status.code) else {
            throw StowageError(
                code: .invalidArgument,
                message: "the route answered with status code \(status.code); a status code has three digits "
                    + "(RFC 9110 §15), so answer with one from 100 to 999"
            )
        }
        var head = HTTPResponse(
            status: HTTPResponse.Status(code: Int(status.code), reasonPhrase: status.reasonPhrase),
            headerFields: headers.httpFields
        )
        let body: HTTPBody
        if let buffer = self.body.buffer {
            body = HTTPBody(bytes: Array(buffer: buffer))
        } else {
            // A stream body's writer is Vapor's own (internal): `collect` is the only public reader.
            let stream = self.body
            body = HTTPBody(length: stream.count >= 0 ? Int64(stream.count) : nil) { writer in
                if let buffer = try await stream.collect(on: eventLoop).get() {
                    try await writer.write(Array(buffer: buffer))
                }
            }
        }
        if let length = body.length, head.headerFields[.contentLength] == nil,
            head.headerFields[.transferEncoding] == nil
        {
            head.headerFields[.contentLength] = String(length)
        }
        return (head, body)
    }

    /// The Vapor response for the cache's answer, its body streamed when not in memory.
    convenience init(answering answer: ServerResponseCache.Answer, allocator: ByteBufferAllocator) {
        let status = HTTPResponseStatus(
            statusCode: answer.head.status.code,
            reasonPhrase: answer.head.status.reasonPhrase
        )
        let body: Response.Body
        if let answerBody = answer.body {
            if let bytes = answerBody.bytesInMemory {
                body = Response.Body(buffer: allocator.buffer(bytes: bytes), byteBufferAllocator: allocator)
            } else {
                let stream: @Sendable (any AsyncBodyStreamWriter) async throws -> Void = { writer in
                    for try await chunk in answerBody { try await writer.writeBuffer(allocator.buffer(bytes: chunk)) }
                }
                if let length = answerBody.length {
                    body = Response.Body(managedAsyncStream: stream, count: Int(length), byteBufferAllocator: allocator)
                } else {
                    body = Response.Body(managedAsyncStream: stream, byteBufferAllocator: allocator)
                }
            }
        } else {
            body = Response.Body(byteBufferAllocator: allocator)
        }
        self.init(status: status, headers: answer.head.headerFields.leavingDateToVapor, body: body)
    }
}
