import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1

/// One HTTP/1 response read from a file as `curl --raw -i` writes it: status line, fields, an
/// empty line, then the body (fixed length: `Content-Length` must match the bytes that follow).
struct CapturedResponse: Sendable {
    let head: HTTPResponseHead
    let body: ByteBuffer
    /// The whole response as captured, for `--raw`.
    let bytes: ByteBuffer

    init(contentsOf path: String) throws {
        let bytes = try Self.read(path)
        guard let end = Self.endOfHead(in: bytes) else {
            throw ValidationError("\(path): no empty line ending the response head")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\r\n")
        let status = lines.first.map { $0.split(separator: " ", maxSplits: 2) } ?? []
        // RFC 9112 §4: the status code is three digits (NIO's custom status would trap on a
        // negative one).
        guard status.count >= 2, status[0] == "HTTP/1.1", status[1].count == 3,
            status[1].allSatisfy({ $0.isASCII && $0.isNumber }), let code = Int(status[1]), (100...599).contains(code)
        else {
            throw ValidationError(
                "\(path): the first line is not an HTTP/1.1 status line with a status from 100 to 599 "
                    + "('HTTP/1.1 200 OK'); capture the response with 'curl --raw -i'"
            )
        }
        var fields = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else {
                throw ValidationError("\(path): field line without a colon: \(line)")
            }
            let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            fields.add(name: String(line[..<colon]), value: String(value))
        }
        let bodyBytes = bytes[(end + 4)...]
        guard fields["content-length"].first.flatMap(Int.init) == bodyBytes.count else {
            throw ValidationError("\(path): Content-Length does not match the \(bodyBytes.count) body bytes")
        }
        head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: code), headers: fields)
        body = ByteBuffer(bytes: bodyBytes)
        self.bytes = ByteBuffer(bytes: bytes)
    }

    private static func endOfHead(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first { bytes[$0..<($0 + 4)].elementsEqual([13, 10, 13, 10]) }
    }

    private static func read(_ path: String) throws -> [UInt8] {
        // Read once at start-up, outside anything timed.
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(path): cannot read the file")
        }
        return [UInt8](data)
    }
}

/// The responses by path: exact paths first, then the longest matching prefix.
struct CapturedResponses: Sendable {
    private let exact: [String: CapturedResponse]
    private let prefixes: [(String, CapturedResponse)]

    init(exact: [(String, CapturedResponse)], prefixes: [(String, CapturedResponse)]) throws {
        self.exact = try Dictionary(exact) { _, _ in throw ValidationError("a path is given twice with --route") }
        self.prefixes = prefixes.sorted { $0.0.count > $1.0.count }
    }

    func response(for uri: String) -> CapturedResponse? {
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        return exact[path] ?? prefixes.first { path.hasPrefix($0.0) }?.1
    }
}
