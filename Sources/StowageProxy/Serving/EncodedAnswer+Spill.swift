import Foundation
import NIOCore
import NIOHTTP1
import StowageHTTPCache

// An answer the proxy worked out from a disk read, as the HTTP cache spills it (`SpilledForm`,
// `HTTPCache+SpilledAnswers.swift`) and as it is sent again. Spilled answers are found by what
// the answer depends on, as nginx finds a cached response by its key: the method, the target, the
// `Host`, and the request fields the response varies on (RFC 9111 §4.1), for a `GET` that asks
// nothing of its own — no `Cache-Control` or `Pragma` (§5.2.1, §5.4), no condition (RFC 9110
// §13), no `Range` (§14.2), no `Authorization` (RFC 9111 §3.5). Any other request is answered
// as before, from memory or by deciding again. The head is the encoded status line and fields
// without `Age`, `Cache-Status` and a `Date` the proxy added, which each hit writes after the others.

extension EncodedAnswer {
    /// The request fields whose presence makes an answer depend on more than the target, the
    /// `Host` and the fields the response varies on.
    static let decidingFields: [String] = [
        "cache-control", "pragma", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since",
        "if-range", "range", "authorization",
    ]

    /// The hash of `request` as spilled answers find it (target and `Host`); `nil` for a request
    /// whose answer is not spilled: not a `GET`, or with one of ``decidingFields``.
    static func spillHash(_ request: HTTPRequestHead) -> Int? {
        guard request.method == .GET else { return nil }
        var hasher = Hasher()
        hasher.combine(request.uri)
        for (name, value) in request.headers {
            if isASCIICaseInsensitivelyEqual(name, "host") {
                hasher.combine(value)
            } else if decidingFields.contains(where: { isASCIICaseInsensitivelyEqual(name, $0) }) {
                return nil
            }
        }
        return hasher.finalize()
    }

    private static func isSpillable(_ request: HTTPRequestHead) -> Bool {
        guard request.method == .GET else { return false }
        return !request.headers.contains { field in
            decidingFields.contains { isASCIICaseInsensitivelyEqual(field.name, $0) }
        }
    }

    /// Whether `name` is `lowercased` but for the case of its ASCII letters (field names are
    /// tokens, RFC 9110 §5.1): a byte comparison, where `caseInsensitiveCompare` took a twentieth
    /// of a spilled hit's time in `perf`.
    private static func isASCIICaseInsensitivelyEqual(_ name: String, _ lowercased: String) -> Bool {
        let bytes = name.utf8
        guard bytes.count == lowercased.utf8.count else { return false }
        return zip(bytes, lowercased.utf8).allSatisfy { byte, lower in
            byte == lower || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") && byte | 0x20 == lower)
        }
    }

    /// The names of the request fields the response varies on (`Vary`, lowercased); `nil` for
    /// `Vary: *`, which no later request matches (RFC 9111 §4.1).
    private static func varyingNames(_ response: HTTPResponseHead) -> [String]? {
        var names: [String] = []
        for value in response.headers["Vary"] {
            for member in value.split(separator: ",") {
                let name = member.trimmingCharacters(in: .whitespaces).lowercased()
                if name == "*" { return nil }
                if !name.isEmpty, !names.contains(name) { names.append(name) }
            }
        }
        return names
    }

    func spilled() -> SpilledForm? {
        let request = HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)
        guard Self.isSpillable(request), let varying = Self.varyingNames(head) else { return nil }
        // The method, the target, the `Host` values, then each varying name and its values, each
        // string length-prefixed and each list counted: no two requests that differ in these give
        // the same bytes.
        var identity: [UInt8] = []
        identity.reserveCapacity(Self.fieldBytes(headers) + uri.utf8.count + 64)
        Self.appendPrefixed(method.rawValue, to: &identity)
        Self.appendPrefixed(uri, to: &identity)
        Self.appendList(headers["Host"], to: &identity)
        Self.appendCount(varying.count, to: &identity)
        for name in varying {
            Self.appendPrefixed(name, to: &identity)
            Self.appendList(headers[name], to: &identity)
        }
        var head: [UInt8] = []
        head.reserveCapacity(encoded.headLength)
        head.append(
            contentsOf: "HTTP/\(self.head.version.major).\(self.head.version.minor) \(self.head.status.code) ".utf8
        )
        head.append(contentsOf: self.head.status.reasonPhrase.utf8)
        head.append(contentsOf: "\r\n".utf8)
        for (name, value) in self.head.headers where !isSetPerHit(name) {
            head.append(contentsOf: name.utf8)
            head.append(contentsOf: ": ".utf8)
            head.append(contentsOf: value.utf8)
            head.append(contentsOf: "\r\n".utf8)
        }
        return SpilledForm(
            identity: identity,
            head: head,
            body: Array(body.readableBytesView),
            addsDate: addedDateSecond != nil
        )
    }

    /// Whether the field named `name` is one each hit sets anew.
    private func isSetPerHit(_ name: String) -> Bool {
        name.caseInsensitiveCompare("Age") == .orderedSame
            || name.caseInsensitiveCompare("Cache-Status") == .orderedSame
            || (addedDateSecond != nil && name.caseInsensitiveCompare("Date") == .orderedSame)
    }

    static func answers(_ request: HTTPRequestHead, spilledIdentity identity: ArraySlice<UInt8>) -> Bool {
        guard isSpillable(request) else { return false }
        var rest = identity
        guard takePrefixed(request.method.rawValue, from: &rest), takePrefixed(request.uri, from: &rest),
            takeValues(named: "host", of: request.headers, from: &rest), let count = takeCount(from: &rest)
        else { return false }
        for _ in 0..<count {
            guard let name = takeString(from: &rest), takeValues(named: name, of: request.headers, from: &rest)
            else { return false }
        }
        return rest.isEmpty
    }

    /// Whether `bytes` starts with the values of `headers`' fields named `lowercased` (in any
    /// case), as ``appendList(_:to:)`` writes `headers[lowercased]`; if so, they are taken off.
    /// Compared field by field, without the array `headers[name]` makes: a spilled hit compares
    /// every request this way.
    private static func takeValues(
        named lowercased: String,
        of headers: HTTPHeaders,
        from bytes: inout ArraySlice<UInt8>
    ) -> Bool {
        guard let count = takeCount(from: &bytes) else { return false }
        var matched = 0
        for (name, value) in headers where isASCIICaseInsensitivelyEqual(name, lowercased) {
            guard matched < count, takePrefixed(value, from: &bytes) else { return false }
            matched += 1
        }
        return matched == count
    }

    private static func appendCount(_ count: Int, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: count).littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func appendList(_ values: [String], to bytes: inout [UInt8]) {
        appendCount(values.count, to: &bytes)
        for value in values { appendPrefixed(value, to: &bytes) }
    }

    private static func takeCount(from bytes: inout ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= 4 else { return nil }
        let start = bytes.startIndex
        let count =
            UInt32(bytes[start]) | UInt32(bytes[start + 1]) << 8 | UInt32(bytes[start + 2]) << 16
            | UInt32(bytes[start + 3]) << 24
        bytes = bytes[(start + 4)...]
        return Int(count)
    }

    private static func takeString(from bytes: inout ArraySlice<UInt8>) -> String? {
        guard let count = takeCount(from: &bytes), count <= bytes.count else { return nil }
        let string = String(decoding: bytes[bytes.startIndex..<(bytes.startIndex + count)], as: UTF8.self)
        bytes = bytes[(bytes.startIndex + count)...]
        return string
    }

    private static func appendPrefixed(_ string: String, to bytes: inout [UInt8]) {
        let count = UInt32(truncatingIfNeeded: string.utf8.count)
        withUnsafeBytes(of: count.littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: string.utf8)
    }

    /// Whether `bytes` starts with `string` as ``appendPrefixed(_:to:)`` writes it; if so, it is
    /// taken off.
    private static func takePrefixed(_ string: String, from bytes: inout ArraySlice<UInt8>) -> Bool {
        let utf8 = string.utf8
        guard bytes.count >= 4 else { return false }
        let start = bytes.startIndex
        let count =
            UInt32(bytes[start]) | UInt32(bytes[start + 1]) << 8 | UInt32(bytes[start + 2]) << 16
            | UInt32(bytes[start + 3]) << 24
        guard count == utf8.count, bytes.count - 4 >= utf8.count else { return false }
        let candidate = bytes[(start + 4)..<(start + 4 + utf8.count)]
        // A native string's bytes are contiguous: one `memcmp`, not an element-wise walk of
        // the UTF-8 view.
        let equal =
            utf8.withContiguousStorageIfAvailable { expected in
                candidate.withUnsafeBufferPointer { actual in
                    expected.isEmpty || memcmp(actual.baseAddress!, expected.baseAddress!, expected.count) == 0
                }
            } ?? candidate.elementsEqual(utf8)
        guard equal else { return false }
        bytes = bytes[(start + 4 + utf8.count)...]
        return true
    }
}

extension EncodedResponse {
    /// The bytes to send for a spilled answer read back (`SpilledHit`): its head, the fields of
    /// this hit, the empty line and its body.
    init(_ hit: SpilledHit) {
        var bytes = ByteBuffer()
        bytes.reserveCapacity(hit.bytes.count + 128)
        _ = hit.bytes.withUnsafeBytes { all in
            bytes.writeBytes(UnsafeRawBufferPointer(rebasing: all[hit.head]))
        }
        bytes.writeStaticString("Age: ")
        bytes.writeString(hit.age)
        bytes.writeStaticString("\r\nCache-Status: ")
        bytes.writeString(hit.cacheStatus)
        bytes.writeStaticString("\r\n")
        if hit.addsDate {
            bytes.writeStaticString("Date: ")
            bytes.writeString(HTTPDate.format(Int64(hit.now.timeIntervalSince1970.rounded(.down))))
            bytes.writeStaticString("\r\n")
        }
        bytes.writeStaticString("\r\n")
        let headLength = bytes.readableBytes
        _ = hit.bytes.withUnsafeBytes { all in
            bytes.writeBytes(UnsafeRawBufferPointer(rebasing: all[hit.body]))
        }
        self.init(encoded: bytes, headLength: headLength)
    }
}
