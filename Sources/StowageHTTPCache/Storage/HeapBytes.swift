import HTTPTypes

/// What a value really holds on the heap, as the HTTP cache's memory level charges its entries
/// to `memoryCapacity`: the allocations behind it, each as the allocator hands it out, not the
/// bytes of its serialized form.
///
/// A stored response in memory is Swift values, not its record's bytes: an `HTTPFields` array of
/// 50-byte fields, a `String` object for every name or value over 15 bytes, the parsed
/// `Cache-Control`, the record's body key. Charged by its encoded size, a 1 KiB response's
/// entries held about twice what they were charged (`Benchmarks/proxy-rss.sh`, issue 45).
///
/// The figures follow the runtime and the allocator, not a guess per type:
/// - an allocation costs what glibc's `malloc` takes for it: the request and an 8-byte header,
///   rounded up to 16, at least 32 (`malloc_usable_size` + 8);
/// - a native `String` over 15 UTF-8 bytes is an object of 32 bytes of header and its bytes
///   with a NUL; up to 15 bytes it is held inline (a "small string", no allocation);
/// - an `Array` is an object of 32 bytes of header and `capacity × stride`; an empty one shares
///   the runtime's empty singleton;
/// - a class instance is 16 bytes of header and its stored properties.
package enum HeapBytes {
    /// What the allocator takes for a request of `bytes`.
    @inlinable
    package static func allocation(_ bytes: Int) -> Int {
        max(32, (bytes + 8 + 15) & ~15)
    }

    /// The heap storage of `string`: none when it is held inline.
    @inlinable
    package static func string(_ string: String) -> Int {
        let count = string.utf8.count
        return count <= 15 ? 0 : allocation(32 + count + 1)
    }

    /// The heap storage of `string`, if any.
    @inlinable
    package static func string(_ string: String?) -> Int {
        string.map { self.string($0) } ?? 0
    }

    /// The buffer of `array` (its capacity, not only its count), without what its elements
    /// point at.
    @inlinable
    package static func buffer<Element>(_ array: [Element]) -> Int {
        array.capacity == 0 ? 0 : allocation(32 + array.capacity * MemoryLayout<Element>.stride)
    }

    /// The storage of a `[String: String]` and its strings: one object of 64 bytes of header,
    /// a bitmap and the keys and values of a power-of-two number of buckets at most 3/4 full;
    /// an empty one shares the runtime's empty singleton.
    package static func dictionary(_ dictionary: [String: String]) -> Int {
        guard !dictionary.isEmpty else { return 0 }
        var buckets = 1
        while buckets * 3 < dictionary.count * 4 { buckets *= 2 }
        var bytes = allocation(64 + (buckets + 63) / 64 * 8 + buckets * 2 * MemoryLayout<String>.stride)
        for (key, value) in dictionary { bytes += string(key) + string(value) }
        return bytes
    }

    /// An array buffer of `count` elements of `stride` bytes (a collection that does not say its
    /// capacity).
    @inlinable
    package static func buffer(count: Int, stride: Int) -> Int {
        count == 0 ? 0 : allocation(32 + count * stride)
    }

    /// A class instance with `storedBytes` of stored properties.
    @inlinable
    package static func object(storedBytes: Int) -> Int {
        allocation(16 + storedBytes)
    }

    /// `fields`' array and the strings of their names and values.
    package static func fields(_ fields: HTTPFields) -> Int {
        var bytes = buffer(count: fields.count, stride: MemoryLayout<HTTPField>.stride)
        for field in fields {
            bytes += string(field.name.rawName) + string(field.value)
            // A name that is not in canonical form (`Content-Type`) keeps a lowercased copy.
            if field.name.canonicalName != field.name.rawName { bytes += string(field.name.canonicalName) }
        }
        return bytes
    }
}
