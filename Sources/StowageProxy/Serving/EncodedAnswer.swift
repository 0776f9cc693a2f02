import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageHTTPCache

/// A hit worked out as the HTTP/1 response head and body to write, kept by the HTTP cache's
/// memory level with the answer it came from, so the same request again gets the same bytes
/// without deciding again — the way Varnish keeps an object's response head ready to send.
///
/// The cache keeps it (``HTTPCache/answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)``)
/// while its answer stands: the same records in memory, and within the second in which the
/// response's `Age` and `Cache-Status` stay the same, and the proxy's `Date` for it, when it
/// adds one, is the same second. Its bytes count against `--memory-capacity` with the
/// responses'. A request matches only when its method, target and every field are the same,
/// byte for byte: whatever a request field changes (`Vary`, conditions, `Cache-Control`, the
/// operator's key fields), a request that differs gets its own entry. A request whose fields
/// are over ``maximumRequestFieldBytes`` is not kept.
///
/// A class, immutable: a hit takes it out of the table with one reference count. A refresh
/// makes a new one.
final class EncodedAnswer: PreparedForm {
    let method: HTTPMethod
    let uri: String
    let headers: HTTPHeaders
    /// The response head, framed by `Content-Length` (``EncodedResponse/framed(_:bodyLength:)``).
    let head: HTTPResponseHead
    /// The head and body as the bytes to write.
    let encoded: EncodedResponse
    /// The second (since 1970) of the `Date` the proxy added; `nil` when the origin's is used.
    let addedDateSecond: Int64?

    /// The largest request fields (names and values) an answer is kept for: a client cannot
    /// fill memory with a few huge requests.
    static let maximumRequestFieldBytes = 16 << 10

    init(
        request: HTTPRequestHead,
        head: HTTPResponseHead,
        body: ByteBuffer,
        addedDateSecond: Int64?,
        isFramed: Bool = false
    ) {
        method = request.method
        uri = request.uri
        headers = request.headers
        self.head = isFramed ? head : EncodedResponse.framed(head, bodyLength: body.readableBytes)
        encoded = EncodedResponse(head: self.head, body: body)
        self.addedDateSecond = addedDateSecond
    }

    private init(_ original: EncodedAnswer, head: HTTPResponseHead, addedDateSecond: Int64?) {
        method = original.method
        uri = original.uri
        headers = original.headers
        self.head = head
        encoded = EncodedResponse(head: head, body: original.body)
        self.addedDateSecond = addedDateSecond
    }

    /// The response body (a view of ``encoded``'s bytes, not a copy).
    var body: ByteBuffer { encoded.body }

    /// This answer with `Age` and `Cache-Status` of now, and the proxy's `Date` of `now` when it
    /// added one.
    func refreshed(age: String, cacheStatus: String, now: Date) -> EncodedAnswer {
        var head = head
        head.headers.replaceOrAdd(name: "Age", value: age)
        head.headers.replaceOrAdd(name: "Cache-Status", value: cacheStatus)
        var second = addedDateSecond
        if second != nil {
            let now = Int64(now.timeIntervalSince1970)
            head.headers.replaceOrAdd(name: "Date", value: HTTPDate.format(now))
            second = now
        }
        return EncodedAnswer(self, head: head, addedDateSecond: second)
    }

    func answers(_ request: HTTPRequestHead) -> Bool {
        request.method == method && request.uri == uri
            && request.headers.elementsEqual(headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Whether the `Date` the proxy added is of the second of `now`.
    func stands(at now: Date) -> Bool {
        guard let addedDateSecond else { return true }
        return Int64(now.timeIntervalSince1970) == addedDateSecond
    }

    /// The heap it holds, as the memory level charges it (``HeapBytes``): this object, the
    /// request's target and fields, the response head it refreshes from, and the encoded
    /// response's buffers.
    var byteCount: Int {
        HeapBytes.object(storedBytes: Self.storedBytes) + HeapBytes.string(uri) + Self.heapBytes(of: headers)
            + HeapBytes.object(storedBytes: Self.headStorageBytes) + Self.heapBytes(of: head.headers)
            + encoded.heapBytes
    }

    /// The bytes of this object's stored properties.
    private static let storedBytes =
        MemoryLayout<HTTPMethod>.stride + MemoryLayout<String>.stride + MemoryLayout<HTTPHeaders>.stride
        + MemoryLayout<HTTPResponseHead>.stride + MemoryLayout<EncodedResponse>.stride
        + MemoryLayout<Int64?>.stride
    /// The object behind an `HTTPResponseHead`: its status (a code and a reason phrase) and version.
    private static let headStorageBytes = MemoryLayout<HTTPResponseStatus>.stride + MemoryLayout<HTTPVersion>.stride

    /// The heap of NIO's `HTTPHeaders`: its array of name and value pairs, and their strings.
    static func heapBytes(of headers: HTTPHeaders) -> Int {
        headers.reduce(HeapBytes.buffer(count: headers.count, stride: MemoryLayout<(String, String)>.stride)) {
            $0 + HeapBytes.string($1.name) + HeapBytes.string($1.value)
        }
    }

    static var usesResponse: Bool { false }

    static var spills: Bool { true }

    /// The bytes of `headers`' names and values, with four for each line's separators.
    static func fieldBytes(_ headers: HTTPHeaders) -> Int {
        headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    /// The hash of `request` as answers tell requests apart: its method, target and fields.
    static func hash(_ request: HTTPRequestHead) -> Int {
        var hasher = Hasher()
        hasher.combine(request.uri)
        hasher.combine(request.method.rawValue)
        for (name, value) in request.headers {
            hasher.combine(name)
            hasher.combine(value)
        }
        return hasher.finalize()
    }
}
