// swift-tools-version: 6.2
import PackageDescription

// Settings every Stowage target shares. Warnings are errors for our own targets only:
// SwiftPM drops warning-control settings of dependencies, so users of the package are never
// broken by a new compiler's warning.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "Stowage",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Stowage", targets: ["Stowage"]),
        .library(name: "StowageCore", targets: ["StowageCore"]),
        .executable(name: "stowage", targets: ["StowageCLI"]),
        .executable(name: "stowage-bench", targets: ["StowageBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // §1: container, locations, marks, disk usage, capacity, sizes, clearing.
        .target(
            name: "StowageCore",
            dependencies: ["CStowageShims"],
            swiftSettings: swiftSettings
        ),
        // Tiny C shim for what Glibc's module map does not show Swift (xattr, statx).
        .target(name: "CStowageShims"),
        // Umbrella: re-exports the light modules.
        .target(name: "Stowage", dependencies: ["StowageCore"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "StowageCLI",
            dependencies: [
                "StowageCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "StowageBench",
            dependencies: [
                "StowageCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "StowageCoreTests", dependencies: ["StowageCore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "StowageCLITests",
            dependencies: ["StowageCore", "StowageCLI"],
            swiftSettings: swiftSettings
        ),
    ]
)
