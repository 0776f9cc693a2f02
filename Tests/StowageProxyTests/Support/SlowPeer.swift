#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a slow peer of the proxy on raw sockets takes its time: the one place in these tests
/// where a peer's pace is real time, because the subject is the proxy's handling of that pace
/// against its real socket deadlines and reads (a slowloris client, a slow steady reader, a
/// request head split across segments, an origin that pauses after an interim response).
enum SlowPeer {
    /// Blocks the calling thread (a raw client's or a scripted origin's own) for `microseconds`.
    static func pause(microseconds: useconds_t) {
        usleep(microseconds)
    }
}
