import SwiftConnect
import SwiftConnectAsyncHTTPClient

/// Every check of ``TracingConformanceTests``, over `AsyncHTTPClientTransport`: the spans come from the core's events,
/// which are the same for every engine, and this shows it. (Each check is named again here: XCTest on Linux finds only
/// the test methods a class declares itself.)
final class TracingConformanceOverAsyncHTTPClientTests: TracingConformanceTests {
    override func makeTransport(pins: CertificatePins = CertificatePins()) -> any Transport {
        AsyncHTTPClientTransport(pins: pins)
    }

    override func testAnAttemptAbandonedAtItsTimeoutEndsItsSpanTimedOut() throws {
        try super.testAnAttemptAbandonedAtItsTimeoutEndsItsSpanTimedOut()
    }
    override func testACallThatSharesAnIdenticalRequestHasItsSpan() throws {
        try super.testACallThatSharesAnIdenticalRequestHasItsSpan()
    }
    override func testTheTemplateStartsWithTheBaseURLsPath() throws {
        try super.testTheTemplateStartsWithTheBaseURLsPath()
    }
    override func test200IsOneClientSpanWithTheConventionsAttributesAndItsContextSent() throws {
        try super.test200IsOneClientSpanWithTheConventionsAttributesAndItsContextSent()
    }
    override func test404IsAnErrorSpanWithTheStatusAsItsType() throws {
        try super.test404IsAnErrorSpanWithTheStatusAsItsType()
    }
    override func testAMethodOpenTelemetryDoesNotKnowIsOtherWithTheOriginalBesideIt() throws {
        try super.testAMethodOpenTelemetryDoesNotKnowIsOtherWithTheOriginalBesideIt()
    }
    override func testTheObserversKnownMethodsReplaceTheDefault() throws {
        try super.testTheObserversKnownMethodsReplaceTheDefault()
    }
    override func testARetriedCallIsTwoSpansInTheCallersTraceTheSecondCountedAsAResend() throws {
        try super.testARetriedCallIsTwoSpansInTheCallersTraceTheSecondCountedAsAResend()
    }
    override func testATokenRefreshIsAnEventOfTheAttemptAfterIt() throws {
        try super.testATokenRefreshIsAnEventOfTheAttemptAfterIt()
    }
    override func testARedirectIsAnEventOfItsAttempt() throws { try super.testARedirectIsAnEventOfItsAttempt() }
    override func testARedirectedAttemptsSpanDescribesTheLastHop() throws {
        try super.testARedirectedAttemptsSpanDescribesTheLastHop()
    }
    override func testARedirectEventHidesTheAttemptsSecretValues() throws {
        try super.testARedirectEventHidesTheAttemptsSecretValues()
    }
    override func testAnEventStreamsSpanEndsWithItsHead() async throws {
        try await super.testAnEventStreamsSpanEndsWithItsHead()
    }
    override func testATimeoutEndsTheSpanAsTimedOut() throws { try super.testATimeoutEndsTheSpanAsTimedOut() }
    override func testACancelledCallEndsItsSpanAsCancelled() throws {
        try super.testACancelledCallEndsItsSpanAsCancelled()
    }
    override func testARefusedConnectionIsItsKind() throws { try super.testARefusedConnectionIsItsKind() }
    override func testAPinTheEngineCannotCheckIsAPinningFailure() throws {
        try super.testAPinTheEngineCannotCheckIsAPinningFailure()
    }
    override func testASizeLimitIsResponseTooLarge() throws { try super.testASizeLimitIsResponseTooLarge() }
    override func testARequestHeldWhileOfflineSaysSoOnItsSpan() throws {
        try super.testARequestHeldWhileOfflineSaysSoOnItsSpan()
    }
    override func testACacheHitMakesNoSpan() throws { try super.testACacheHitMakesNoSpan() }
}
