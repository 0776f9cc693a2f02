import Synchronization

/// Whether the memory level evicted entries for its limits lately: compared once a second with
/// the count seen the second before (``StowageCache/MemoryCache/limitEvictionCount``), so a
/// request pays one atomic load in most seconds.
///
/// The HTTP cache asks it before keeping a server's answer in full: while memory evicts, the
/// answers it holds in full (records, body and the bytes to send, about four kilobytes for a
/// 1 KiB response) take the room of many spilled ones (about 280 bytes each), so an answer kept
/// in full is spilled on its next hit (`HTTPCache+SpilledAnswers.swift`). A working set that fits
/// evicts nothing and stays in full; one that does not is spilled until it fits — nginx keeps
/// only keys in its `keys_zone` and leaves bodies to the page cache for the same reason.
final class MemoryEvictionWatch: Sendable {
    private let seenCount = Atomic<Int>(0)
    private let seenSecond = Atomic<Int64>(.min)
    private let evicting = Atomic<Bool>(false)

    /// Whether evictions were seen between the last two seconds anybody asked in, given the
    /// count now and the current second. Racing callers may both compare in a new second; each
    /// then stores what it saw, and the next second corrects either.
    func isEvicting(evictionCount count: Int, second: Int64) -> Bool {
        if seenSecond.load(ordering: .relaxed) != second {
            seenSecond.store(second, ordering: .relaxed)
            let before = seenCount.exchange(count, ordering: .relaxed)
            evicting.store(count != before, ordering: .relaxed)
        }
        return evicting.load(ordering: .relaxed)
    }
}
