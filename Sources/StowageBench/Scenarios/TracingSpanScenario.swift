import Foundation
import StowageCache
import StowageCore
import Tracing

/// `tracing.noop-span`: nanoseconds a span costs a path below memory when no tracer is
/// bootstrapped — what a cache miss, an HTTP decision or a Redis command pays per span for being
/// traceable. Stowage's components read `InstrumentationSystem.tracer` once per operation (a
/// lock and a cast; a `NoOpTracer` here) and, finding a `NoOpTracer`, start no span
/// (`withSpanIfTracing`). Baselines on the same tiny async call: `direct` (the call alone),
/// `tracer-lookup-only` (the look-up, then the call) and `withAnySpan` (the library's own call,
/// which starts a no-op span, binds it as the task-local context and ends it). Memory hits make
/// no tracing call, so they pay nothing; `hybrid-cache.memory-hit` measures them.
struct TracingSpanScenario: Scenario {
    var name: String { "tracing.noop-span" }

    /// What each contender does around the same async call.
    enum Contender: CaseIterable {
        /// The span as Stowage's components make it: the tracer looked up, and, a `NoOpTracer`
        /// found, no span started (`withSpanIfTracing`).
        case span
        /// The call alone.
        case direct
        /// `InstrumentationSystem.tracer` looked up, then the call, no span.
        case lookupOnly
        /// The library's own `withAnySpan` on the tracer looked up: a no-op span started, bound
        /// as the task-local context and ended.
        case plainSpan
    }

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let rounds = 200_000
        let clock = ContinuousClock()
        var times: [Contender: [Double]] = [:]
        var sums: [Contender: Int] = [:]
        for repetition in 0..<max(context.iterations, 3) {
            let order = repetition.isMultiple(of: 2) ? Contender.allCases : Contender.allCases.reversed()
            for contender in order {
                var sum = 0
                let start = clock.now
                for round in 0..<rounds {
                    switch contender {
                    case .span:
                        sum &+= await InstrumentationSystem.tracer.withSpanIfTracing("bench.span") { _ in
                            await Self.asyncWork(round)
                        }
                    case .direct:
                        sum &+= await Self.asyncWork(round)
                    case .lookupOnly:
                        let tracer = InstrumentationSystem.tracer
                        sum &+= await Self.asyncWork(round) &+ (tracer is NoOpTracer ? 0 : 1)
                    case .plainSpan:
                        sum &+= await InstrumentationSystem.tracer.withAnySpan("bench.span") { _ in
                            await Self.asyncWork(round)
                        }
                    }
                }
                times[contender, default: []].append(Subprocess.seconds(clock.now - start) / Double(rounds) * 1e9)
                sums[contender] = sum
            }
        }
        return ScenarioResult(
            name: name,
            unit: "ns/op",
            stowage: median(times[.span]!),
            baselines: [
                "direct": median(times[.direct]!),
                "tracer-lookup-only": median(times[.lookupOnly]!),
                "withAnySpan": median(times[.plainSpan]!),
            ],
            ok: Set(sums.values).count == 1,
            notes: "\(rounds) sequential calls from one task, no tracer bootstrapped (NoOpTracer); span minus direct "
                + "is one span's cost on a path below memory"
        )
    }

    @inline(never)
    private static func asyncWork(_ value: Int) async -> Int { value &* 31 &+ 7 }
}
