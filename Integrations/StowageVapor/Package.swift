// swift-tools-version: 6.2
import PackageDescription

// StowageVapor: a Vapor app caches its own responses with Stowage's HTTPCache. A package of its
// own so that Stowage's users (and its CI's main build) never resolve Vapor's dependency graph.
// Same settings as the root package: warnings are errors for our own targets.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "StowageVapor",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .visionOS(.v2)],
    products: [
        .library(name: "StowageVapor", targets: ["StowageVapor"])
    ],
    dependencies: [
        // Stowage itself, by path: this package lives in its repository. Named, so the product
        // references below do not depend on the name of the folder the repository is cloned into.
        .package(name: "Stowage", path: "../.."),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .target(
            name: "StowageVapor",
            dependencies: [
                .product(name: "StowageHTTPCache", package: "Stowage"),
                .product(name: "StowageCore", package: "Stowage"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Benchmarks/middleware-load.sh's Vapor server (FRAMEWORKS=vapor). An executable target
        // of the root package: `swift build --product` builds it, and no package depending on
        // StowageVapor sees it.
        .executableTarget(
            name: "StowageVaporMiddlewareBench",
            dependencies: [
                "StowageVapor",
                .product(name: "StowageHTTPCache", package: "Stowage"),
                .product(name: "Vapor", package: "vapor"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StowageVaporTests",
            dependencies: [
                "StowageVapor",
                .product(name: "StowageHTTPCache", package: "Stowage"),
                .product(name: "StowageCore", package: "Stowage"),
                .product(name: "StowageTesting", package: "Stowage"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "VaporTesting", package: "vapor"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
