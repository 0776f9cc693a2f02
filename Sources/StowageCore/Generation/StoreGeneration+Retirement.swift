import CStowageShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Retiring the stores inside a directory that is about to be deleted, so that no open handle
// keeps serving them from memory or from files it still holds open.

extension StoreGeneration {
    /// A file whose shared header carries a store's generation.
    struct Marker: Sendable {
        /// The file's name, or how it ends.
        var name: String
        var isSuffix: Bool
        /// The bytes the file starts with.
        var magic: [UInt8]
        /// Where the generation sits in the file.
        var counterOffset: Int

        /// Whether an entry named `entry` may be such a file.
        func matches(_ entry: String) -> Bool { isSuffix ? entry.hasSuffix(name) : entry == name }
    }

    /// The files that carry a generation: a store directory's ``fileName`` (disk caches, HTTP
    /// caches) and a preferences log, whose header holds its generation at offset 32.
    static let markers = [
        Marker(name: fileName, isSuffix: false, magic: magic, counterOffset: counterOffset),
        Marker(name: ".stowprefs", isSuffix: true, magic: Array("STWPREF1".utf8), counterOffset: 32),
    ]

    /// Retires every store marked among `names`, entries of the directory open at `directory`:
    /// call it before deleting them. Anything that is not a sound marker (wrong type, wrong
    /// magic, too short, a link) is left alone.
    ///
    /// - Returns: How many stores were retired.
    @discardableResult
    package static func retireStores(named names: [String], in directory: Int32) -> Int {
        var retired = 0
        for name in names {
            guard let marker = markers.first(where: { $0.matches(name) }) else { continue }
            if retire(name, in: directory, marker: marker) { retired += 1 }
        }
        return retired
    }

    /// Sets the retired bit of the marker `name`; `false` when it is not one.
    private static func retire(_ name: String, in directory: Int32, marker: Marker) -> Bool {
        let descriptor = openat(directory, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let length = marker.counterOffset + 8
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size >= off_t(length),
            let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED
        else { return false }
        defer { munmap(mapped, length) }
        let magicMatches = marker.magic.indices.allSatisfy {
            mapped.load(fromByteOffset: $0, as: UInt8.self) == marker.magic[$0]
        }
        guard magicMatches else { return false }
        _ = stowage_atomic_fetch_or_u64(
            mapped.advanced(by: marker.counterOffset).assumingMemoryBound(to: UInt64.self),
            retiredBit
        )
        return true
    }
}
