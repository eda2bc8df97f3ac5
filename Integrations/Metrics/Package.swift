// swift-tools-version:6.0
import PackageDescription

// Metrics of SwiftConnect's calls through swift-metrics: in a package of its own so the core keeps zero dependencies.
let package = Package(
    name: "SwiftConnectMetrics",
    platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6)],
    products: [
        .library(name: "SwiftConnectMetrics", targets: ["SwiftConnectMetrics"])
    ],
    dependencies: [
        .package(name: "SwiftConnect", path: "../.."),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // Tests only: the README's example puts the tracing observer beside this one.
        .package(name: "SwiftConnectTracing", path: "../Tracing"),
    ],
    targets: [
        .target(
            name: "SwiftConnectMetrics",
            dependencies: [
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "SwiftConnectMetricsTests",
            dependencies: [
                "SwiftConnectMetrics",
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "SwiftConnectTesting", package: "SwiftConnect"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "SwiftConnectTracing", package: "SwiftConnectTracing"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
