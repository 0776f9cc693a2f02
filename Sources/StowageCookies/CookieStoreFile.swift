import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The cookie file: a header line, then one line per cookie.
///
/// ```
/// stowage-cookies 1
/// 1b2c3d4e {"name":"id","value":"42","domain":"example.com",…}
/// ```
///
/// Each record line is the CRC-32C of its JSON (8 lowercase hex digits), a space, and the
/// cookie as JSON (which never holds a raw newline). A line whose checksum does not match, or
/// whose JSON is not a sound cookie, is skipped on reading: damage costs the damaged record
/// only, and the rest of the file still loads. The file is replaced whole, atomically
/// (temporary file, fsync, rename), so a process killed mid-write leaves the previous file.
enum CookieStoreFile {
    static let header = "stowage-cookies 1"
    static let version = 1

    struct Contents {
        var cookies: [Cookie] = []
        var damagedRecords = 0
    }

    static func encode(_ cookies: [Cookie]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes = Array((header + "\n").utf8)
        for cookie in cookies {
            // Encoding a struct of strings, booleans and dates cannot fail.
            guard let json = try? encoder.encode(cookie) else { continue }
            let checksum = CRC32C.checksum(json)
            bytes += Array(hex(checksum).utf8)
            bytes.append(UInt8(ascii: " "))
            bytes += json
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// Reads the file at `url`; an absent file is an empty store.
    ///
    /// - Throws: `StowageError` `.unsupported` for a file of a newer format (which a write
    ///   would destroy), or the error of reading it.
    static func read(_ url: URL) throws -> Contents {
        // A regular file only: `Data(contentsOf:)` would wait forever on a FIFO put in the
        // file's place and read a device until memory runs out. 64 MiB is far above the
        // largest file the store's limits allow (3000 cookies of 4 KiB).
        let data: Data
        do {
            data = try RegularFile.read(url.fileSystemPath, subject: "the cookie file")
        } catch let error as StowageError where error.code == .notFound {
            return Contents()
        }
        var contents = Contents()
        let decoder = JSONDecoder()
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).enumerated() {
            if index == 0, line.starts(with: Array("stowage-cookies ".utf8)) {
                let version = Int(String(decoding: line.dropFirst("stowage-cookies ".utf8.count), as: UTF8.self))
                if let version, version > Self.version {
                    throw StowageError(
                        code: .unsupported,
                        message:
                            "the cookie file \(url.fileSystemPath) is format \(version), newer than this version of Stowage reads "
                            + "(\(Self.version)); open it with a newer Stowage or remove it",
                        path: url.fileSystemPath
                    )
                }
                continue
            }
            guard line.count > 9, line[line.startIndex + 8] == UInt8(ascii: " "),
                let stored = UInt32(String(decoding: line.prefix(8), as: UTF8.self), radix: 16)
            else {
                contents.damagedRecords += 1
                continue
            }
            let json = Data(line.dropFirst(9))
            guard CRC32C.checksum(json) == stored, let cookie = try? decoder.decode(Cookie.self, from: json),
                isSound(cookie)
            else {
                contents.damagedRecords += 1
                continue
            }
            contents.cookies.append(cookie)
        }
        return contents
    }

    /// A record that passed its checksum but could not have been stored is damage too.
    private static func isSound(_ cookie: Cookie) -> Bool {
        !cookie.name.isEmpty && !cookie.domain.isEmpty && cookie.path.hasPrefix("/")
            && !(cookie.name + cookie.value).utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: ";") }
            )
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
