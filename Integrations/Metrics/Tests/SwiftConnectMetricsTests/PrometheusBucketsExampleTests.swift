import Foundation
import SwiftConnectMetrics
import XCTest

/// The Metrics article's swift-prometheus example, run as written against stand-ins with swift-prometheus 2.2's
/// shape (`PrometheusMetricsFactory.durationHistogramBuckets: [String: [Duration]]`): this package does not depend
/// on swift-prometheus, and `MetricsSystem.bootstrap` may run once per process. The article checks that its block
/// is here (`DocCExamplesTests`).
final class PrometheusBucketsExampleTests: XCTestCase {
    func testTheArticlesBucketsReachTheFactoryAsDurations() throws {
        // Article: begin
        var factory = PrometheusMetricsFactory()
        let buckets: [Duration] = MetricsObserver.durationBuckets.map { .seconds($0) }
        factory.durationHistogramBuckets["http.client.request.duration"] = buckets
        MetricsSystem.bootstrap(factory)
        // Article: end

        let given = try XCTUnwrap(MetricsSystem.bootstrapped?.durationHistogramBuckets["http.client.request.duration"])
        XCTAssertEqual(given, buckets)
        XCTAssertEqual(buckets.count, MetricsObserver.durationBuckets.count)
        for (duration, seconds) in zip(buckets, MetricsObserver.durationBuckets) {
            let (whole, attoseconds) = duration.components
            XCTAssertEqual(Double(whole) + Double(attoseconds) / 1e18, seconds, accuracy: 1e-12)
        }
        XCTAssertEqual(buckets.first, .milliseconds(5))
        XCTAssertEqual(buckets.last, .seconds(10))
    }
}

/// swift-prometheus's factory, as far as the article uses it.
private struct PrometheusMetricsFactory {
    var durationHistogramBuckets: [String: [Duration]] = [:]
}

/// swift-metrics' `MetricsSystem`, as far as the article uses it: this file's name for it, which leaves the
/// process's real one untouched. It keeps the factory it is given, for the test to read.
private enum MetricsSystem {
    /// The factory given to ``bootstrap(_:)``, behind a lock (tests may run on any thread).
    private static let given = Given()

    static var bootstrapped: PrometheusMetricsFactory? { given.factory }

    static func bootstrap(_ factory: PrometheusMetricsFactory) {
        given.factory = factory
    }

    /// `@unchecked Sendable`: `lock` guards `stored`, the only state.
    private final class Given: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: PrometheusMetricsFactory?

        var factory: PrometheusMetricsFactory? {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }
}
