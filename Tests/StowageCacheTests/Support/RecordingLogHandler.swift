import Logging
import Synchronization

/// Keeps what a logger was given, for tests of what is logged.
struct RecordingLogHandler: LogHandler {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    final class Records: Sendable {
        private let records = Mutex<[Record]>([])
        func append(_ record: Record) { records.withLock { $0.append(record) } }
        var all: [Record] { records.withLock { $0 } }
    }

    let records: Records
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        records.append(Record(level: event.level, message: "\(event.message)", metadata: event.metadata ?? [:]))
    }
}
