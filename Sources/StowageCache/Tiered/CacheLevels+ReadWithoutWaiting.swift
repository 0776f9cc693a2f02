import Tracing

extension CacheLevels {
    /// ``readBelowMemory(_:through:)`` for a caller that must not suspend (a server's event loop)
    /// and found `key` missing from memory itself: the value from the disk index when it holds
    /// it whole (``DiskCache/indexedValueWithoutWaiting(forKey:)``: one indexed `SELECT`, no file read),
    /// kept in memory as a read below memory keeps it, with the same check that a change begun
    /// since the disk read keeps it out (``keepInMemory(_:forKey:cost:readAt:)``).
    ///
    /// `nil` whenever only ``read(_:through:)`` can answer, which the caller then awaits: a miss,
    /// a value in a file, bytes that do not decode (that read removes them), a value memory
    /// refuses, and every read of levels with a shared level (a disk copy may need confirming
    /// against it and a miss may be filled from it) or with a tracer recording (that read traces
    /// its disk read).
    package func readBelowMemoryWithoutWaiting<Reading: LevelReading>(
        _ key: String,
        through reading: Reading
    ) -> Reading.Found? where Reading.Entry == Value {
        readDiskIndexWithoutWaiting(key, through: reading, keepsInMemory: true)?.found
    }

    /// ``readBelowMemoryWithoutWaiting(_:through:)`` keeping nothing in memory, for a caller that
    /// keeps what it needs of the value otherwise (the HTTP cache's spilled answers), with the
    /// disk copy's ``DiskCache/StoredData/fingerprint``, by which the caller can tell later
    /// whether the disk still holds the same copy.
    package func readBelowMemoryKeepingNothingWithoutWaiting<Reading: LevelReading>(
        _ key: String,
        through reading: Reading
    ) -> (found: Reading.Found, fingerprint: UInt64)? where Reading.Entry == Value {
        readDiskIndexWithoutWaiting(key, through: reading, keepsInMemory: false)
    }

    private func readDiskIndexWithoutWaiting<Reading: LevelReading>(
        _ key: String,
        through reading: Reading,
        keepsInMemory: Bool
    ) -> (found: Reading.Found, fingerprint: UInt64)? where Reading.Entry == Value {
        guard reading.readsBelowMemory, let disk, sharedLevel == nil, activeTracer is NoOpTracer else { return nil }
        // Marked before the disk read, as in the asynchronous read.
        let mark = beginRead()
        guard let stored = disk.indexedValueWithoutWaiting(forKey: key),
            Int64(stored.data.count) <= reading.wholeReadLimit,
            let decoded = try? reading.decode(stored.data, forKey: key)
        else { return nil }
        let cost: Int?
        do {
            cost = try reading.memoryCost(of: decoded.entry, byteCount: stored.data.count, forKey: key)
        } catch {
            return nil
        }
        if keepsInMemory, let cost { keepInMemory(decoded.entry, forKey: key, cost: cost, readAt: mark) }
        return (decoded.found, stored.fingerprint)
    }

    /// The ``DiskCache/StoredData/fingerprint`` of `key`'s copy in the disk index now, read as
    /// ``readBelowMemoryWithoutWaiting(_:through:)`` reads it (its access counted); `nil` when
    /// that read would give nothing.
    package func diskFingerprintWithoutWaiting(_ key: String) -> UInt64? {
        guard let disk, sharedLevel == nil, activeTracer is NoOpTracer else { return nil }
        return disk.indexedValueWithoutWaiting(forKey: key)?.fingerprint
    }
}
