import Foundation
import StowageCore
import Synchronization

/// The file in which the HTTP cache keeps the answers it worked out from disk reads as the bytes
/// a server sends (``SpilledAnswer``), so the same request again costs one `pread` and no
/// decoding: nginx keeps a cached response as one file holding the header it sends and the body,
/// found through the keys it holds in memory (`proxy_cache_path … keys_zone`).
///
/// It is a copy, never the store: an anonymous file in the disk cache's directory (Linux's
/// `O_TMPFILE`; elsewhere a name unlinked at once), gone when the process ends or is killed, so
/// a crash leaves nothing behind and nothing in it is ever read by another process or a later
/// run. Records are appended up to ``capacity`` bytes; the next append past it empties the file
/// and starts a new ``generation``, and every place of the old one reads as nothing. Each read
/// is checked against the CRC-32C taken when it was written: bytes the disk garbled, or a late
/// append of the old generation overwrote, are a miss.
final class AnswerSpill: Sendable {
    /// Where one record is: its generation, offset and length, and its checksum.
    struct Place: Sendable {
        let generation: UInt32
        let length: UInt32
        let offset: Int64
        let checksum: UInt32
    }

    /// The most bytes the file holds before it starts again.
    let capacity: Int64
    /// The largest record kept: a sixteenth of ``capacity`` (no one answer empties the file).
    var largestRecord: Int { Int(capacity / 16) }

    private let file: AnonymousFile
    private let state: Mutex<(generation: UInt32, end: Int64)>
    /// ``state``'s generation, read without the lock by ``read(_:)``.
    private let currentGeneration = Atomic<UInt32>(0)

    /// Opens an anonymous file in `directory`; `nil` when none can be made there (the answers
    /// are then not spilled, and disk hits are read as before).
    init?(directory: String, capacity: Int64) {
        guard capacity > 0, let file = try? AnonymousFile(in: directory) else { return nil }
        self.file = file
        self.capacity = capacity
        state = Mutex((0, 0))
    }

    /// Appends `record` (the pieces written one after the other); `nil` when it is larger than
    /// ``largestRecord`` or the write fails (a full disk: the answer is not spilled).
    func append(_ pieces: [UInt8]...) -> Place? {
        let length = pieces.reduce(0) { $0 + $1.count }
        guard length > 0, length <= largestRecord else { return nil }
        let (generation, offset) = state.withLock { state -> (UInt32, Int64) in
            if state.end + Int64(length) > capacity { startOver(&state) }
            let offset = state.end
            state.end += Int64(length)
            return (state.generation, offset)
        }
        var checksum: UInt32 = 0
        var at = offset
        for piece in pieces {
            checksum = CRC32C.checksum(piece, continuing: checksum)
            do {
                try piece.withUnsafeBytes { try file.write($0, at: Int(at)) }
            } catch {
                return nil
            }
            at += Int64(piece.count)
        }
        return Place(generation: generation, length: UInt32(length), offset: offset, checksum: checksum)
    }

    /// The bytes at `place`, or `nil` when its generation has passed, the read falls short or
    /// fails, or the bytes are not the ones written there (their checksum differs).
    func read(_ place: Place) -> [UInt8]? {
        guard place.generation == currentGeneration.load(ordering: .acquiring) else { return nil }
        let length = Int(place.length)
        var complete = false
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            let read = try? file.read(into: UnsafeMutableRawBufferPointer(buffer), at: Int(place.offset))
            complete = read == length
            count = complete ? length : 0
        }
        guard complete, place.generation == currentGeneration.load(ordering: .acquiring),
            CRC32C.checksum(bytes) == place.checksum
        else { return nil }
        return bytes
    }

    /// Empties the file and starts a new generation: every place given before reads as nothing
    /// (a clear of the cache: the copies go with what they copied).
    func removeAll() {
        state.withLock { startOver(&$0) }
    }

    /// Starts a new generation and empties the file, under ``state``'s lock. The generation is
    /// marked first, so a read that races the truncation finds its place gone.
    private func startOver(_ state: inout (generation: UInt32, end: Int64)) {
        state.generation &+= 1
        currentGeneration.store(state.generation, ordering: .releasing)
        state.end = 0
        file.removeAllBytes()
    }

    /// The bytes the file holds now.
    var byteCount: Int64 { state.withLock { $0.end } }
}
