import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A manifest task resolved against the container: what to measure, what to remove, which
/// handlers to call. Built in the pre-calculating phase, before anything is deleted.
struct PreparedTask: Sendable {
    /// The entries the task removes (path tasks), each relative to an open directory.
    var units: [Unit] = []
    /// What handler tasks measure; re-listed after the handlers ran.
    var measuredDirectories: [OpenDirectory] = []
    /// The handlers of a handler task, in selector order.
    var handlers: [CleanHandlers.Handler] = []
    var result: CleanReport.TaskResult

    /// One entry and the directory it is in.
    struct Unit: Sendable {
        var directory: OpenDirectory
        var name: String
        var type: UInt8
    }

    /// Whether the task can run (it was resolved without error).
    var isRunnable: Bool { result.error == nil }
}

/// Resolves manifest tasks into ``PreparedTask``s, inside the container only.
struct CleanTargets {
    let container: Container
    let handlers: CleanHandlers

    /// Resolves task number `index` (from 1). Errors go into the result, never thrown.
    func prepare(_ task: CleanTask, index: Int) -> PreparedTask {
        let subject = "task \(index) (\(task))"
        var prepared = PreparedTask(result: CleanReport.TaskResult(index: index, task: task.description))
        do {
            switch task {
            case .path(let path, let entries):
                prepared.units = try units(path: path, entries: entries, subject: subject)
            case .handler(let className, let selectors):
                let missing = selectors.filter { !handlers.contains(className: className, selector: $0) }
                guard missing.isEmpty else {
                    throw StowageError(
                        code: .notFound,
                        message: "\(subject): no handler is registered for "
                            + missing.map { "\(className).\($0)" }.joined(separator: ", ")
                            + "; register it with CleanHandlers.register(className:selector:) or remove the task",
                        path: className
                    )
                }
                prepared.handlers = selectors.compactMap { handlers.handler(className: className, selector: $0) }
                for measured in prepared.handlers.flatMap(\.measuring) {
                    let path = try ContainerPath(parsing: measured, subject: subject)
                    switch try ConfinedResolver.resolve(path, in: container, subject: subject) {
                    case .directory(let directory): prepared.measuredDirectories.append(directory)
                    case .entry(let parent, let name):
                        prepared.units.append(.init(directory: parent, name: name, type: UInt8(DT_UNKNOWN)))
                    case .missing: break
                    }
                }
            }
        } catch {
            prepared.result.error =
                error as? StowageError ?? StowageError(code: .ioError, message: "\(subject): \(error)")
        }
        prepared.result.targets = prepared.units.map { $0.directory.pathOf($0.name) }
        return prepared
    }

    private func units(path: String, entries: [String], subject: String) throws -> [PreparedTask.Unit] {
        let containerPath = try ContainerPath(parsing: path, subject: subject)
        let patterns = try entries.map { try EntryPattern(parsing: $0, subject: subject) }
        switch try ConfinedResolver.resolve(containerPath, in: container, subject: subject) {
        case .missing:
            return []
        case .entry(let parent, let name):
            guard patterns.isEmpty else {
                throw StowageError(
                    code: .notADirectory,
                    message: "\(subject): '\(parent.pathOf(name))' is a file, so its Entries cannot match anything; "
                        + "remove the Entries to delete the file itself",
                    path: parent.pathOf(name)
                )
            }
            return [.init(directory: parent, name: name, type: UInt8(DT_UNKNOWN))]
        case .directory(let directory):
            // The caches location keeps its CACHEDIR.TAG, as Container.clear does.
            let isCachesRoot = directory.path == container.url(for: .caches).fileSystemPath
            let units =
                patterns.isEmpty
                ? try directory.entries().map { PreparedTask.Unit(directory: directory, name: $0.name, type: $0.type) }
                : try matches(patterns, in: directory)
            return units.filter { !(isCachesRoot && $0.directory === directory && $0.name == "CACHEDIR.TAG") }
        }
    }

    /// Entries matching any pattern, each once, in listing order.
    private func matches(_ patterns: [EntryPattern], in directory: OpenDirectory) throws -> [PreparedTask.Unit] {
        var result: [PreparedTask.Unit] = []
        var seen = Set<String>()
        for pattern in patterns {
            try collect(pattern, level: 0, in: directory, into: &result, seen: &seen)
        }
        return result
    }

    private func collect(
        _ pattern: EntryPattern,
        level: Int,
        in directory: OpenDirectory,
        into result: inout [PreparedTask.Unit],
        seen: inout Set<String>
    ) throws {
        for entry in try directory.entries() where pattern.matches(entry.name, level: level) {
            if level == pattern.components.count - 1 {
                if seen.insert(directory.pathOf(entry.name)).inserted {
                    result.append(.init(directory: directory, name: entry.name, type: entry.type))
                }
            } else if entry.type == UInt8(DT_DIR) || entry.type == UInt8(DT_UNKNOWN),
                let child = directory.openChild(entry.name)
            {
                // Only real directories are descended into: O_NOFOLLOW refuses links.
                try collect(pattern, level: level + 1, in: child, into: &result, seen: &seen)
            }
        }
    }
}
