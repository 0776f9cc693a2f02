import Foundation
import StowageCore
import Testing

@Suite("ByteCount")
struct ByteCountTests {
    @Test(
        "the compact style reproduces ClearCacheTool's strings",
        arguments: [
            (512, "512.00B"), (1_000, "1000.00B"), (1_001, "1.00KB"), (3_400, "3.40KB"),
            (1_000_000, "1000.00KB"), (12_345_678, "12.35M"), (2_500_000_000, "2.50G"), (0, "0.00B"),
        ] as [(Int64, String)]
    )
    func compactStyle(bytes: Int64, expected: String) {
        #expect(ByteCount(bytes).formatted(.compact) == expected)
    }

    @Test(
        "decimal and binary styles show three significant digits",
        arguments: [
            (512, "512 B", "512 B"), (3_400, "3.4 KB", "3.32 KiB"), (12_345_678, "12.3 MB", "11.8 MiB"),
            (999_999, "1 MB", "977 KiB"), (1_500_000_000, "1.5 GB", "1.4 GiB"),
        ] as [(Int64, String, String)]
    )
    func unitStyles(bytes: Int64, decimal: String, binary: String) {
        #expect(ByteCount(bytes).formatted(.decimal) == decimal)
        #expect(ByteCount(bytes).formatted(.binary) == binary)
    }

    @Test(
        "sizes written by people parse",
        arguments: [
            ("512", 512), ("200MB", 200_000_000), ("200 mb", 200_000_000), ("1.5GiB", 1_610_612_736),
            ("  7k ", 7_000), ("3 bytes", 3), ("1TiB", 1 << 40),
        ] as [(String, Int64)]
    )
    func parsing(text: String, bytes: Int64) throws {
        #expect(try ByteCount(parsing: text).rawValue == bytes)
    }

    @Test(
        "non-sizes are invalidArgument errors that show the accepted forms",
        arguments: ["", "MB", "-5MB", "1.2.3", "12 parsecs", "99999999999PB"]
    )
    func badSizes(text: String) {
        #expect {
            try ByteCount(parsing: text)
        } throws: { error in
            guard let error = error as? StowageError else { return false }
            return error.code == .invalidArgument && error.message.contains("200MB")
        }
    }

    @Test("ByteCount encodes as a bare integer")
    func codable() throws {
        let data = try JSONEncoder().encode([ByteCount(42)])
        #expect(String(decoding: data, as: UTF8.self) == "[42]")
        #expect(try JSONDecoder().decode([ByteCount].self, from: data) == [42])
    }
}
