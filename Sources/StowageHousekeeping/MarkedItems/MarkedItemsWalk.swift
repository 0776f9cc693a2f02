import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The work behind ``MarkedItems``: finds marked entries through descriptors, then removes them
/// oldest first, each reached again from its location without following a link.
///
/// The walk keeps its own stack instead of recursing, and opens a directory only when its turn
/// comes: open descriptors grow with the tree's depth, not with its width, and a tree too deep
/// for the descriptor limit is reported (`EMFILE`), never a crash.
struct MarkedItemsWalk {
    let container: Container
    let cancellation: CancellationFlag?

    /// A marked item and the way back to it.
    private struct Found {
        var item: MarkedItems.Item
        /// Names from the location's directory to the item's parent.
        var parentComponents: [String]
        var name: String
        var identity: FileIdentity
    }

    /// A directory waiting for its turn: opened from `parent` when it comes.
    private struct Pending {
        var parent: OpenDirectory
        var name: String
        var components: [String]
    }

    func scan() throws -> MarkedItems.Scan {
        let (found, skipped, _) = try find()
        return MarkedItems.Scan(items: found.map(\.item), skipped: skipped)
    }

    /// - Parameter beforeRemoving: Runs between the finding and the first removal (tests swap
    ///   entries there).
    func purge(atLeast goal: ByteCount?, beforeRemoving: () -> Void = {}) throws -> MarkedItems.Report {
        var (found, failures, reachedTimeLimit) = try find()
        beforeRemoving()
        var removed: [MarkedItems.Item] = []
        var freed = ByteCount.zero
        var next = 0
        while next < found.count, !reachedTimeLimit {
            if let goal, freed >= goal { break }
            do {
                try cancellation?.check()
                let candidate = found[next]
                switch try remove(candidate) {
                case .removed(let skipped):
                    removed.append(candidate.item)
                    freed += candidate.item.bytes
                    failures += skipped
                case .gone:
                    break
                case .failed(let failure):
                    failures.append(failure)
                }
                next += 1
            } catch is TimeLimitReached {
                reachedTimeLimit = true
            }
        }
        found.removeFirst(next)
        return MarkedItems.Report(
            removed: removed,
            bytesFreed: freed,
            remaining: found.count,
            failures: failures,
            reachedTimeLimit: reachedTimeLimit
        )
    }

    // MARK: - Finding

    /// Every marked item, oldest first, and what was skipped; at the time limit, those found so
    /// far.
    private func find() throws -> (found: [Found], skipped: [String], reachedTimeLimit: Bool) {
        var found: [Found] = []
        var skipped: [String] = []
        var reachedTimeLimit = false
        do {
            try find(into: &found, skipped: &skipped)
        } catch is TimeLimitReached {
            reachedTimeLimit = true
        }
        found.sort { ($0.item.modified, $0.item.path) < ($1.item.modified, $1.item.path) }
        return (found, skipped, reachedTimeLimit)
    }

    private func find(into found: inout [Found], skipped: inout [String]) throws {
        var seen = Set<FileIdentity>()
        var roots: [(Location, OpenDirectory)] = []
        var rootIdentities = Set<FileIdentity>()
        for location in Location.allCases {
            guard let descriptor = try container.openLocationDirectory(location, creating: false) else { continue }
            // The location's file system bounds the walk: a mount inside it is never searched,
            // measured or removed (as `rm --one-file-system`), and is reported.
            let directory = OpenDirectory(
                descriptor: descriptor,
                path: container.url(for: location).fileSystemPath,
                boundary: FileSystemBoundary(descriptor: descriptor)
            )
            guard let identity = Self.identity(of: descriptor) else { continue }
            // A location inside another (a temporary directory under caches) is walked once, as
            // itself, and never taken for a marked item of the other.
            if seen.insert(identity).inserted { roots.append((location, directory)) }
            rootIdentities.insert(identity)
        }
        for (location, root) in roots {
            var stack: [Pending] = []
            var first: OpenDirectory? = root
            while true {
                try cancellation?.check()
                let directory: OpenDirectory
                let components: [String]
                if let root = first {
                    (directory, components, first) = (root, [], nil)
                } else if let pending = stack.popLast() {
                    guard let opened = pending.parent.openChild(pending.name) else {
                        if errno != ENOENT {
                            skipped.append("\(pending.parent.pathOf(pending.name)): cannot open: \(Errno.current)")
                        }
                        continue
                    }
                    // Judged by what was opened: a mount that appeared since the listing is skipped.
                    guard opened.isInsideBoundary else {
                        skipped.append("\(opened.path): \(FileSystemBoundary.skipMessage)")
                        continue
                    }
                    (directory, components) = (opened, pending.components)
                } else {
                    break
                }
                var names: [String] = []
                do {
                    try OpenDirectory.forEachEntry(in: directory.descriptor, path: directory.path) { raw, type in
                        guard type != UInt8(DT_LNK) else { return }  // Never followed; Linux marks no links.
                        guard let name = String(validatingCString: raw) else {
                            skipped.append(
                                "\(directory.path)/\(String(cString: raw).visibleEscapes): name is not UTF-8"
                            )
                            return
                        }
                        names.append(name)
                    }
                } catch let error as StowageError {
                    skipped.append("\(directory.path): \(error.message)")
                    continue
                }
                for name in names {
                    switch examine(name, in: directory, location: location, roots: rootIdentities, seen: &seen) {
                    case .skip(let reason?):
                        skipped.append("\(directory.pathOf(name)): \(reason)")
                    case .skip(nil):
                        break
                    case .descend:
                        stack.append(Pending(parent: directory, name: name, components: components + [name]))
                    case .marked(let item, let identity):
                        found.append(Found(item: item, parentComponents: components, name: name, identity: identity))
                    }
                }
            }
        }
    }

    private enum Verdict {
        case skip(String?)
        case descend
        case marked(MarkedItems.Item, FileIdentity)
    }

    /// Opens `name` without following a link, reads its mark through that descriptor, and says
    /// what to do with it. `roots` are the locations' directories, which no removal may take.
    private func examine(
        _ name: String,
        in directory: OpenDirectory,
        location: Location,
        roots: Set<FileIdentity>,
        seen: inout Set<FileIdentity>
    ) -> Verdict {
        guard let status = FileStatus.at(directory.descriptor, name) else {
            return .skip(errno == ENOENT ? nil : "cannot examine: \(Errno.current)")
        }
        // FIFOs, sockets and devices are never opened: opening some has effects.
        guard status.type != .other else { return .skip(nil) }
        // A mount point (marked or not) and what is under it belong to another file system.
        guard directory.boundary?.contains(status) ?? true else { return .skip(FileSystemBoundary.skipMessage) }
        guard seen.insert(status.identity).inserted else { return .skip(nil) }
        let flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY
        let descriptor = openat(directory.descriptor, name, flags | (status.type == .directory ? O_DIRECTORY : 0))
        guard descriptor >= 0 else {
            return .skip(errno == ENOENT ? nil : "cannot open to read its mark: \(Errno.current)")
        }
        defer { close(descriptor) }
        // The name may have been replaced between the examination and the open.
        guard Self.identity(of: descriptor) == status.identity else { return .skip("changed while it was examined") }
        let path = directory.pathOf(name)
        let isMarked: Bool
        do {
            isMarked = try Marks.isPurgeable(descriptor: descriptor, path: path)
        } catch let error as StowageError {
            return .skip(error.message)
        } catch {
            return .skip("\(error)")
        }
        guard isMarked else { return status.type == .directory ? .descend : .skip(nil) }
        var bytes = Self.freeableBytes(status)
        var modified = status.modificationTime
        if status.type == .directory {
            let child = OpenDirectory(descriptor: dup(descriptor), path: path)
            guard child.descriptor >= 0 else { return .skip("cannot measure: \(Errno.current)") }
            var newestFile: Double?
            var holdsLocation = false
            measure(
                child,
                boundary: directory.boundary,
                bytes: &bytes,
                newestFile: &newestFile,
                holdsLocation: &holdsLocation,
                roots: roots,
                seen: &seen
            )
            // Removing it would remove a location (one reached through a link inside the root).
            if holdsLocation { return .skip("holds a location's directory, which is never removed; left in place") }
            // A directory is as recent as its newest file; its own time only says an entry came or went.
            modified = newestFile ?? modified
        }
        let item = MarkedItems.Item(
            path: path,
            location: location,
            bytes: ByteCount(bytes),
            modified: Date(timeIntervalSince1970: modified),
            isDirectory: status.type == .directory
        )
        return .marked(item, status.identity)
    }

    /// Adds up a marked directory's tree and finds its newest file's modification, with its own
    /// stack of names: a directory is opened when its turn comes, so open descriptors grow with
    /// the tree's depth, never with its width. `holdsLocation` tells whether one of `roots` is in
    /// the tree.
    private func measure(
        _ root: OpenDirectory,
        boundary: FileSystemBoundary?,
        bytes: inout Int64,
        newestFile: inout Double?,
        holdsLocation: inout Bool,
        roots: Set<FileIdentity>,
        seen: inout Set<FileIdentity>
    ) {
        // A name is kept as its bytes: one that is not UTF-8 is measured too.
        var stack: [(parent: OpenDirectory, name: [CChar])] = []
        var first: OpenDirectory? = root
        while true {
            let directory: OpenDirectory
            if let root = first {
                (directory, first) = (root, nil)
            } else if let (parent, name) = stack.popLast() {
                let child = openat(parent.descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard child >= 0 else { continue }
                directory = OpenDirectory(descriptor: child, path: parent.path)
            } else {
                return
            }
            try? OpenDirectory.forEachEntry(in: directory.descriptor, path: directory.path) { name, _ in
                guard let status = FileStatus.at(directory.descriptor, name) else { return }
                if roots.contains(status.identity) { holdsLocation = true }
                // A mount inside stays when the item goes (TreeRemoval): it frees nothing.
                guard boundary?.contains(status) ?? true else { return }
                guard seen.insert(status.identity).inserted else { return }
                bytes += Self.freeableBytes(status)
                guard status.type == .directory else {
                    newestFile = max(newestFile ?? status.modificationTime, status.modificationTime)
                    return
                }
                stack.append((directory, Array(UnsafeBufferPointer(start: name, count: strlen(name) + 1))))
            }
        }
    }

    /// The space removing this entry gives back: a file with other links (a hard link from
    /// outside the container, say) keeps its blocks, so it counts for nothing.
    private static func freeableBytes(_ status: FileStatus) -> Int64 {
        status.type == .directory || status.linkCount <= 1 ? status.allocatedBytes : 0
    }

    // MARK: - Removing

    private enum Removal {
        /// Removed, but for the mount points inside it, which are named.
        case removed(skipped: [String])
        /// Gone before this walk reached it (another purge got there first): it frees nothing
        /// here, and the next item is tried.
        case gone
        case failed(String)
    }

    /// Removes one found item after checking it is still the entry that was found.
    private func remove(_ found: Found) throws -> Removal {
        guard let locationDescriptor = try container.openLocationDirectory(found.item.location, creating: false) else {
            return .failed("\(found.item.path): its location no longer exists")
        }
        var parent = OpenDirectory(
            descriptor: locationDescriptor,
            path: container.url(for: found.item.location).fileSystemPath,
            boundary: FileSystemBoundary(descriptor: locationDescriptor)
        )
        for component in found.parentComponents {
            guard let child = parent.openChild(component) else {
                if errno == ENOENT { return .gone }
                return .failed("\(found.item.path): cannot reach it again (\(Errno.current)); left in place")
            }
            parent = child
        }
        // The mark is read again through a fresh descriptor: a file put in its place since the
        // scan may even have its inode number (file systems reuse them at once).
        let flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY
        let descriptor = openat(parent.descriptor, found.name, flags | (found.item.isDirectory ? O_DIRECTORY : 0))
        guard descriptor >= 0 else {
            if errno == ENOENT { return .gone }
            return .failed(
                "\(found.item.path): replaced or unreadable since its mark was read (\(Errno.current)); left in place"
            )
        }
        defer { close(descriptor) }
        // Mounted on since the scan: the item underneath is out of reach, the mount is not ours.
        guard parent.boundary?.contains(descriptor: descriptor) ?? true else {
            return .failed("\(found.item.path): \(FileSystemBoundary.skipMessage)")
        }
        guard Self.identity(of: descriptor) == found.identity,
            (try? Marks.isPurgeable(descriptor: descriptor, path: found.item.path)) == true
        else {
            return .failed("\(found.item.path): replaced or unmarked since its mark was read; left in place")
        }
        var removal = TreeRemoval(cancellation: cancellation)
        try removal.remove(found.name, type: UInt8(found.item.isDirectory ? DT_DIR : DT_REG), in: parent)
        let (skips, failures) = removal.failures.partitioned(by: { $0.message == FileSystemBoundary.skipMessage })
        guard failures.isEmpty else {
            return .failed(removal.failures.map(\.description).joined(separator: "; "))
        }
        // Everything of the item's own file system went; the mounts inside it (not measured in
        // its bytes) stay and are named.
        return .removed(skipped: skips.map(\.description))
    }

    private static func identity(of descriptor: Int32) -> FileIdentity? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        return FileIdentity(status)
    }
}

extension String {
    /// The text with control characters and U+FFFD (an undecodable byte) shown as escapes.
    fileprivate var visibleEscapes: String {
        unicodeScalars.map { $0.properties.generalCategory == .control ? $0.escaped(asASCII: true) : String($0) }
            .joined()
    }
}

extension Array {
    /// The elements for which `belongs` holds, and the others, each in order.
    fileprivate func partitioned(by belongs: (Element) -> Bool) -> (matching: [Element], others: [Element]) {
        var matching: [Element] = []
        var others: [Element] = []
        for element in self {
            if belongs(element) { matching.append(element) } else { others.append(element) }
        }
        return (matching, others)
    }
}
