// swift-tools-version:6.0
import PackageDescription

// Traces of SwiftConnect's calls through swift-distributed-tracing: in a package of its own so the core keeps zero
// dependencies.
let package = Package(
    name: "SwiftConnectTracing",
    platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6)],
    products: [
        .library(name: "SwiftConnectTracing", targets: ["SwiftConnectTracing"])
    ],
    dependencies: [
        .package(name: "SwiftConnect", path: "../.."),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // For the tests only: the conformance checks run over the AsyncHTTPClient engine too.
        .package(name: "SwiftConnectAsyncHTTPClient", path: "../../Transports/AsyncHTTPClient"),
    ],
    targets: [
        .target(
            name: "SwiftConnectTracing",
            dependencies: [
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "SwiftConnectTracingTests",
            dependencies: [
                "SwiftConnectTracing",
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "SwiftConnectTesting", package: "SwiftConnect"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "SwiftConnectAsyncHTTPClient", package: "SwiftConnectAsyncHTTPClient"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
