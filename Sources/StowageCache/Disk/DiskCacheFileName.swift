/// Names of the files behind large values: derived from a hash of the key, never from the key.
///
/// A name is `HH/HHHHHHHHHHHHHHHH-RRRRRRRRRRRR.ext`: the first two hex digits of a 64-bit
/// FNV-1a hash of the key's UTF-8 bytes pick one of 256 subdirectories, the full hash follows,
/// then 48 random bits that make every write's file new (a file is never rewritten in place,
/// so a reader holding an old name reads the old value or nothing), then the key's extension
/// where it has a short alphanumeric one, as SDWebImage keeps `.png`.
///
/// The hash only spreads files; correctness never rests on it: the index maps each key to its
/// exact file name, so two keys with the same hash still get different files.
enum DiskCacheFileName {
    static func make(forKey key: String) -> String {
        let hash = fnv1a(key)
        let hex = hexDigits(hash, count: 16)
        let unique = hexDigits(UInt64.random(in: 0...UInt64.max), count: 12)
        let name = String(hex.prefix(2)) + "/" + hex + "-" + unique
        if let pathExtension = pathExtension(ofKey: key) { return name + "." + pathExtension }
        return name
    }

    /// The key's extension: after the last `.` of its last path component, query and fragment
    /// removed; only 1 to 8 ASCII letters and digits qualify (nothing that could form a path).
    static func pathExtension(ofKey key: String) -> String? {
        let withoutQuery = key.prefix { $0 != "?" && $0 != "#" }
        let lastComponent = withoutQuery.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard let dot = lastComponent.lastIndex(of: "."), dot != lastComponent.startIndex else { return nil }
        let candidate = lastComponent[lastComponent.index(after: dot)...]
        guard (1...8).contains(candidate.count),
            candidate.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))
            })
        else { return nil }
        return String(candidate)
    }

    /// 64-bit FNV-1a: stable across processes and runs (unlike Swift's seeded `Hasher`).
    static func fnv1a(_ key: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    private static func hexDigits(_ value: UInt64, count: Int) -> String {
        let digits = String(value, radix: 16)
        let padded = String(repeating: "0", count: max(0, 16 - digits.count)) + digits
        return String(padded.suffix(count))
    }
}
