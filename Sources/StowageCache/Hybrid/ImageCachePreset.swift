import StowageCore

// The image-cache preset: the defaults of SDWebImage's `SDImageCache` (memory in front of disk)
// and AFNetworking's `AFImageCache` (memory only), one configuration per level. Opt-in: the
// general defaults stay as they are.
//
// ```swift
// let cache = HybridCache(
//     memory: try MemoryCache(configuration: .imageCache()),
//     disk: try DiskCache(container: container, name: "images", configuration: .imageCache()),
//     serializer: PNGSerializer(),
//     configuration: .imageCache { bitmap in bitmap.bytesPerRow * bitmap.height }
// )
// ```

extension HybridCache.Configuration {
    /// Memory costs from decoded values, as an image cache counts them.
    ///
    /// `SDImageCache` costs an image in memory by `sd_memoryCost` — its decoded bitmap, bytes
    /// per row × height — not by the size of its compressed file, so that the memory budget
    /// bounds what the images really take.
    ///
    /// - Parameter decodedCost: The bytes a decoded value takes in memory (e.g.
    ///   `bytesPerRow × height` for a bitmap), from 0 to ``maximumCost``.
    /// - Returns: A configuration whose ``cost`` ignores the encoded size.
    public static func imageCache(decodedCost: @escaping @Sendable (Value) -> Int) -> Self {
        Self { value, _ in decodedCost(value) }
    }
}

extension MemoryCache.Configuration {
    /// A memory level for decoded images: emptied on the first memory warning.
    ///
    /// - ``memoryPressureResponse``: ``MemoryPressureResponse/emptyOnWarning``, as
    ///   `AFImageCache` removes all its objects on `UIApplicationDidReceiveMemoryWarningNotification`
    ///   (decoded images are large and cheap to decode again from disk).
    /// - ``costLimit``: none by default, as `SDImageCache`'s `maxMemoryCost` of 0 and
    ///   `AFImageCache`'s `NSCache` leave it to the system; give one (in bytes, with decoded
    ///   costs from ``HybridCache/Configuration/imageCache(decodedCost:)``) to bound memory.
    /// - Everything else as ``init(name:countLimit:costLimit:defaultTimeToLive:)``.
    ///
    /// - Parameters:
    ///   - name: A name for metrics. Default `"images"`.
    ///   - costLimit: The most total cost kept; `nil` (the default) for no limit.
    /// - Returns: The configuration.
    public static func imageCache(name: String = "images", costLimit: Int? = nil) -> Self {
        var configuration = Self(name: name, costLimit: costLimit)
        configuration.memoryPressureResponse = .emptyOnWarning
        return configuration
    }
}

extension DiskCache.Configuration {
    /// A disk level for image files with `SDImageCache`'s defaults.
    ///
    /// - ``maximumAge``: one week, `SDImageCacheConfig`'s `maxDiskAge` (`maxCacheAge`,
    ///   `60 * 60 * 24 * 7`): older files go at the next trim.
    /// - ``ageBasis``: ``DiskCache/AgeBasis/modified``, `SDImageCacheConfig`'s default
    ///   `diskCacheExpireType` (`NSURLContentModificationDateKey`): a week after it was
    ///   written, however often it was read since. Set ``DiskCache/AgeBasis/accessed`` for its
    ///   `SDImageCacheConfigExpireTypeAccessDate`.
    /// - ``trimRatio``: `0.5`: over the size limit, `SDImageCache` deletes the oldest files
    ///   until the cache is under half of `maxDiskSize`. (It picks them by the age date; this
    ///   cache evicts the least recently used.)
    /// - ``sizeAccounting``: ``DiskCache/SizeAccounting/allocated``: `SDImageCache` adds up
    ///   `NSURLTotalFileAllocatedSizeKey`, the blocks files take.
    /// - Everything else as ``init(name:)``.
    ///
    /// - Parameters:
    ///   - name: A name for logs and metrics. Default `"images"`.
    ///   - sizeLimit: The cap the trim halves. Default 150 MB, the general default;
    ///     `SDImageCache`'s `maxDiskSize` is 0 (no cap) until set: pass `nil` for that.
    /// - Returns: The configuration.
    public static func imageCache(name: String = "images", sizeLimit: ByteCount? = ByteCount(150_000_000)) -> Self {
        var configuration = Self(name: name)
        configuration.sizeLimit = sizeLimit
        configuration.maximumAge = .seconds(7 * 24 * 3600)
        configuration.ageBasis = .modified
        configuration.trimRatio = 0.5
        configuration.sizeAccounting = .allocated
        return configuration
    }
}
