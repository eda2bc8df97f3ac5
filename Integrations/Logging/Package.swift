// swift-tools-version:6.0
import PackageDescription

// SwiftConnect's output and events through swift-log: in a package of its own so the core keeps zero dependencies.
let package = Package(
    name: "SwiftConnectLogging",
    platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6)],
    products: [
        .library(name: "SwiftConnectLogging", targets: ["SwiftConnectLogging"])
    ],
    dependencies: [
        .package(name: "SwiftConnect", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "SwiftConnectLogging",
            dependencies: [
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "SwiftConnectLoggingTests",
            dependencies: [
                "SwiftConnectLogging",
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "SwiftConnectTesting", package: "SwiftConnect"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
