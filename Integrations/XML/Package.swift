// swift-tools-version:6.0
import PackageDescription

// XML bodies for SwiftConnect, on CoreOffice/XMLCoder: in a package of its own so the core keeps zero dependencies.
let package = Package(
    name: "SwiftConnectXML",
    platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6)],
    products: [
        .library(name: "SwiftConnectXML", targets: ["SwiftConnectXML"])
    ],
    dependencies: [
        .package(name: "SwiftConnect", path: "../.."),
        .package(url: "https://github.com/CoreOffice/XMLCoder", from: "0.18.2"),
    ],
    targets: [
        .target(
            name: "SwiftConnectXML",
            dependencies: [
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "XMLCoder", package: "XMLCoder"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "SwiftConnectXMLTests",
            dependencies: [
                "SwiftConnectXML",
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "SwiftConnectTesting", package: "SwiftConnect"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
