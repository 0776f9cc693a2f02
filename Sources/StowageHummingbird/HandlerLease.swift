import Hummingbird
import StowageCore
import Synchronization

/// A middleware's next handler, callable from the cache's tasks until the middleware returns.
///
/// Hummingbird's `next` may not escape the middleware's `handle`; the cache calls it from a
/// collapsed fetch's task. ``end()`` refuses later calls and waits for those in flight, so no
/// reference to `next` outlives `handle`.
final class HandlerLease<Context: Sendable>: @unchecked Sendable {
    typealias Handler = (Request, Context) async throws -> Response

    private struct State {
        var isEnded = false
        var callsInFlight = 0
        var waiter: CheckedContinuation<Void, Never>?
    }

    // Read and written only under `state`'s lock.
    private var handler: Handler?
    private let state = Mutex(State())

    init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    /// Calls the handler.
    ///
    /// - Throws: `StowageError` `.unsupported` after ``end()``; what the handler throws.
    func call(_ request: Request, _ context: Context) async throws -> Response {
        let result = await invoke(request, context)
        state.withLock { state in
            state.callsInFlight -= 1
            if state.isEnded, state.callsInFlight == 0, let waiter = state.waiter {
                state.waiter = nil
                waiter.resume()
            }
        }
        return try result.get()
    }

    /// The handler's result; its reference to the handler ends when this returns.
    private func invoke(_ request: Request, _ context: Context) async -> Result<Response, any Error> {
        let handler: Handler? = state.withLock { state in
            state.callsInFlight += 1
            return state.isEnded ? nil : self.handler
        }
        guard let handler else {
            return .failure(
                StowageError(
                    code: .unsupported,
                    message: "the middleware's next handler was called after the middleware returned (a "
                        + "background revalidation); use ResponseCacheResponder to refresh in the background"
                )
            )
        }
        do {
            return .success(try await handler(request, context))
        } catch {
            return .failure(error)
        }
    }

    /// Refuses further calls and waits for the calls in flight to return.
    func end() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                state.isEnded = true
                handler = nil
                if state.callsInFlight == 0 {
                    continuation.resume()
                } else {
                    state.waiter = continuation
                }
            }
        }
    }
}
