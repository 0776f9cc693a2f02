import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a ``ContainerPath`` names once resolved inside its location.
package enum ConfinedTarget {
    /// A directory, open.
    case directory(OpenDirectory)
    /// Something else (a file, a socket, …) named `name` in the open directory `parent`.
    case entry(parent: OpenDirectory, name: String)
    /// Nothing exists at the path; `path` is where it would be.
    case missing(path: String)
}

/// Resolves container paths one component at a time, relative to open directory descriptors,
/// so that nothing outside the location's directory can be reached.
///
/// This is `openat2(…, RESOLVE_IN_ROOT)` done in user space, portably, with errors that say
/// which link was at fault: every component is examined with `fstatat(…, AT_SYMLINK_NOFOLLOW)`
/// and opened with `O_NOFOLLOW`; a symbolic link is read with `readlinkat` and its target
/// resolved the same way, from the location's directory for an absolute target inside it, or
/// from the link's directory for a relative one. A target that leaves the location (an absolute
/// path elsewhere, `..` above the root) is refused, as are chains of more than 40 links (a loop).
/// A link swapped in after it was examined makes `O_NOFOLLOW` fail: refused, never followed.
/// (GNU `rm` and Python's `shutil.rmtree` defend the same race with `openat` and `O_NOFOLLOW`.)
package enum ConfinedResolver {
    /// Links followed before a path counts as a loop, as Linux's `MAXSYMLINKS`.
    package static let maximumLinks = 40

    /// Resolves `path` in `container`.
    ///
    /// - Parameters:
    ///   - subject: What the path belongs to, for messages: `"task 2 (Path 'x')"`.
    ///   - creating: Create missing directories (`0700`) on the way, the location's included.
    /// - Throws: `StowageError`: `.pathEscapesRoot` for a link leading outside the location,
    ///   `.invalidArgument` for a link loop, `.notADirectory` when a middle component is a file,
    ///   system-call errors otherwise.
    package static func resolve(
        _ path: ContainerPath,
        in container: Container,
        subject: String,
        creating: Bool = false
    ) throws -> ConfinedTarget {
        let rootPath = container.url(for: path.location).fileSystemPath
        if creating { _ = try container.directory(for: path.location) }
        // The location's own directory is opened confined too: `Library` or `Caches` replaced by a
        // link to outside a rooted container is refused there (Container.openLocationDirectory).
        guard let rootDescriptor = try container.openLocationDirectory(path.location, creating: creating) else {
            return .missing(path: path.url(in: container).fileSystemPath)
        }
        // Everything resolved here carries the location's file system: a removal below a mount
        // inside the location skips it (FileSystemBoundary).
        let root = OpenDirectory(
            descriptor: rootDescriptor,
            path: rootPath,
            boundary: FileSystemBoundary(descriptor: rootDescriptor)
        )
        let realRoot = Container.realPath(of: rootDescriptor)

        var stack: [OpenDirectory] = [root]
        var pending = path.components
        var links = 0
        // The link whose target is being resolved, so that an escape names it.
        var lastLink: (path: String, target: String)?
        func escape(_ link: String, _ target: String) -> StowageError {
            StowageError(
                code: .pathEscapesRoot,
                message: "\(subject): the symbolic link '\(link)' points to '\(target)', outside the container's "
                    + "\(path.location) directory '\(rootPath)'; refusing to follow it — point the task at a "
                    + "directory inside the container or remove the link",
                path: link
            )
        }
        while !pending.isEmpty {
            let component = pending.removeFirst()
            if component == "." || component.isEmpty { continue }
            let current = stack.last!
            if component == ".." {
                guard stack.count > 1 else { throw escape(lastLink?.path ?? current.path, lastLink?.target ?? "..") }
                stack.removeLast()
                continue
            }
            guard let status = FileStatus.at(current.descriptor, component) else {
                guard errno == ENOENT else {
                    throw StowageError.syscall(.current, "examine", path: current.pathOf(component))
                }
                guard creating else { return .missing(path: current.pathOf(component)) }
                if mkdirat(current.descriptor, component, 0o700) != 0 && errno != EEXIST {
                    throw StowageError.syscall(.current, "create directory", path: current.pathOf(component))
                }
                pending = [component] + pending
                continue
            }
            if status.mode & 0o170000 == 0o120000 {
                links += 1
                let linkPath = current.pathOf(component)
                guard links <= maximumLinks else {
                    throw StowageError(
                        code: .invalidArgument,
                        message: "\(subject): more than \(maximumLinks) symbolic links while resolving "
                            + "'\(path)' (last at '\(linkPath)'): a symbolic link loop; remove the loop",
                        path: linkPath
                    )
                }
                let target = try readLink(component, in: current)
                lastLink = (linkPath, target)
                var parts = target.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
                if target.hasPrefix("/") {
                    let inside = [rootPath, realRoot].compactMap { $0 }.compactMap { base -> [String]? in
                        let baseParts = base.split(separator: "/").map(String.init)
                        return parts.starts(with: baseParts) ? Array(parts.dropFirst(baseParts.count)) : nil
                    }.first
                    guard let inside else { throw escape(linkPath, target) }
                    stack = [root]
                    parts = inside
                }
                pending = parts + pending
                continue
            }
            if status.type == .directory {
                guard let child = current.openChild(component) else {
                    if errno == ELOOP || errno == ENOTDIR {
                        // Swapped for a link or a file since fstatat: look again.
                        pending = [component] + pending
                        continue
                    }
                    throw StowageError.syscall(.current, "open directory", path: current.pathOf(component))
                }
                stack.append(child)
                continue
            }
            guard pending.allSatisfy({ $0 == "." || $0.isEmpty }) else {
                throw StowageError(
                    code: .notADirectory,
                    message: "\(subject): '\(current.pathOf(component))' is a file, not a directory, so '\(path)' "
                        + "cannot be inside it",
                    path: current.pathOf(component)
                )
            }
            return .entry(parent: current, name: component)
        }
        return .directory(stack.last!)
    }

    private static func readLink(_ name: String, in directory: OpenDirectory) throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(directory.descriptor, name, &buffer, buffer.count - 1)
        guard count >= 0 else { throw StowageError.syscall(.current, "read link", path: directory.pathOf(name)) }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
