// swift-tools-version:6.0
// The libFuzzer build of pinproxy's fuzz targets, kept out of the main
// package so that `swift build` and `make test` never need the fuzzer
// runtime. Each target's checks live in the main package's PinproxyFuzzing
// library (Fuzz/Targets), where the regression tests call them too; an
// executable here only hands libFuzzer's input to one of them.
//
// Built by Fuzz/fuzz.sh (`make fuzz`) with
//   swift build --package-path Fuzz --scratch-path .build-fuzz -c release \
//     --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address ...
// See docs/fuzzing.md.
import PackageDescription

let targets = [
    "http1-request", "http1-response", "hostname", "clienthello",
    "policy-json", "policy-xml", "policy-plist", "certificates", "rules", "http2-frames", "http2-responses",
]

let package = Package(
    name: "pinproxy-fuzz",
    dependencies: [.package(name: "pinproxy", path: "..")],
    targets: targets.map { name in
        .executableTarget(
            name: "fuzz-\(name)",
            dependencies: [.product(name: "PinproxyFuzzing", package: "pinproxy")],
            path: "Entry/\(name)")
    },
    swiftLanguageModes: [.v6]
)
