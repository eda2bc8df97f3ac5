import Dispatch
import Foundation
import SwiftConnect

/// A `JSONDecoder` that adds up the wall time spent in it, so a benchmark can take the decoding out of a request's
/// time and compare what is left: the pipeline's own work "on top of decoding" (issue 6, item 6).
///
/// A class, so a client given it as its only decoder uses it as it would its default `JSONDecoder` (one decoder
/// for every content type). Both ways of making a request use the same instance, so the decoding itself is the
/// same code on the same decoder, and only the work around it differs.
public final class TimedDecoder: ResponseBodyDecoder, @unchecked Sendable {
    private let decoder = JSONDecoder()
    /// Protects `elapsed`. Uncontended: the benchmarks make one request at a time.
    private let lock = NSLock()
    private var elapsed = 0

    /// A decoder that has timed nothing yet.
    public init() {}

    /// Decodes `type` from `data` with a `JSONDecoder`, adding the time it took to ``takeElapsed()``'s count.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            let time = Int(DispatchTime.now().uptimeNanoseconds - start)
            lock.lock()
            elapsed += time
            lock.unlock()
        }
        return try decoder.decode(type, from: data)
    }

    /// The nanoseconds spent decoding since the last call, and starts counting again from zero.
    public func takeElapsed() -> Int {
        lock.lock()
        defer { lock.unlock() }
        let time = elapsed
        elapsed = 0
        return time
    }
}
