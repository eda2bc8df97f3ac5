// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SwiftConnect",
    platforms: [
        .macOS(.v10_15),
        .iOS(.v13),
        .tvOS(.v13),
        .watchOS(.v6),
    ],
    products: [
        .library(name: "SwiftConnect", targets: ["SwiftConnect"]),
        .library(name: "SwiftConnectTesting", targets: ["SwiftConnectTesting"]),
        .executable(name: "Playground", targets: ["Playground"]),
    ],
    targets: [
        .target(
            name: "SwiftConnect",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .target(
            name: "SwiftConnectTesting",
            dependencies: ["SwiftConnect"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "Playground",
            dependencies: ["SwiftConnect", "SwiftConnectTesting"],
            path: "Playground"
        ),
        .testTarget(
            name: "SwiftConnectTests",
            dependencies: ["SwiftConnect", "SwiftConnectTesting"]
        ),
        .testTarget(
            name: "SwiftConnectTestingTests",
            dependencies: ["SwiftConnect", "SwiftConnectTesting"]
        ),
        // The integration tests of SwiftConnectTests again (symbolic links under Shared/), each run twice: recording
        // through RecordingTransport, then replaying with nothing sent (ReplayHarness.swift).
        .testTarget(
            name: "SwiftConnectReplayTests",
            dependencies: ["SwiftConnect", "SwiftConnectTesting"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
