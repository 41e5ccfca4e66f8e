import Foundation
import PinproxyCertificates
import PinproxyProxy

/// What a correct policy does in a scenario.
public enum Expectation: String, Sendable, Codable {
    case accept = "ACCEPT"
    case reject = "REJECT"
}

/// Whether the tester installed the proxy CA on the device, for the scenarios to run.
public enum DeviceTrust: String, Sendable, CaseIterable {
    case yes, no, both

    /// The settings to run, installed first.
    public var settings: [Bool] {
        switch self {
        case .yes: return [true]
        case .no: return [false]
        case .both: return [true, false]
        }
    }
}

/// What a row of the matrix asks: whether the policy stops an attacker (`attack`, with
/// the baselines `direct` and `passthrough`), or whether it survives a legitimate change
/// of the genuine server's certificates (`rotation`), where a refusal is an outage.
public enum ScenarioKind: String, Sendable, Codable, CaseIterable {
    case attack
    case rotation
}

/// The kinds of rows a check runs (`check --scenarios`).
public enum ScenarioSelection: String, Sendable, CaseIterable {
    case attacks, rotations, all

    public func includes(_ kind: ScenarioKind) -> Bool {
        switch self {
        case .attacks: return kind == .attack
        case .rotations: return kind == .rotation
        case .all: return true
        }
    }
}

/// One row of the matrix: a way of reaching the origin, and whether the device
/// trusts the proxy CA as a user-installed anchor; or a rotation of the genuine
/// chain, reached directly or through `passthrough`.
public struct Scenario: Sendable, Hashable {
    /// Straight to the genuine origin, no proxy in between.
    public static let directName = "direct"

    /// `direct`, `passthrough`, the attack profile's name, or the rotation's name.
    public var name: String
    /// The proxy profile; nil for the direct connection.
    public var profile: AttackProfile?
    /// Whether the device trusts the proxy CA; nil when an external client's own
    /// configuration decides what it trusts, and in rotation rows (nothing is forged).
    public var deviceTrustsProxyCA: Bool?
    /// The rotation the origin serves (``Rotation/name``); nil in attack rows.
    public var rotation: String?

    public init(profile: AttackProfile?, deviceTrustsProxyCA: Bool?) {
        self.name = profile?.name ?? Self.directName
        self.profile = profile
        self.deviceTrustsProxyCA = deviceTrustsProxyCA
    }

    /// The rotation `name`, reached directly (`passthrough` false) or through the proxy's `passthrough`.
    public init(rotation name: String, passthrough: Bool) {
        self.name = name
        self.profile = passthrough ? .passthrough : nil
        self.deviceTrustsProxyCA = nil
        self.rotation = name
    }

    public var kind: ScenarioKind { rotation == nil ? .attack : .rotation }

    /// The user anchors of this row's device: the proxy CA when the row says the device
    /// trusts it, none otherwise (nil is the device as shipped, as in rotation rows).
    public func userAnchors(proxyCA: Certificate) -> [Certificate] {
        deviceTrustsProxyCA == true ? [proxyCA] : []
    }

    /// The row in words, as a progress line names it: `forge, proxy CA on the device`,
    /// `re-key, through passthrough`, `direct`.
    public var label: String {
        if rotation != nil { return "\(name), \(profile == nil ? "direct" : "through \(route)")" }
        switch deviceTrustsProxyCA {
        case true?: return "\(name), proxy CA on the device"
        case false?: return "\(name), proxy CA not on the device"
        case nil: return name
        }
    }

    /// How a rotation row reaches the origin: `direct` or `passthrough`.
    public var route: String { profile?.name ?? Self.directName }

    /// The genuine chain (direct, passed through, or rotated) must be accepted; every attack refused.
    public var expected: Expectation {
        profile == nil || profile == .passthrough ? .accept : .reject
    }

    /// The rotation rows for `rotations` (names, in order), each directly and through
    /// `passthrough`, restricted to `selected` names when given.
    public static func rotationRows(_ rotations: [String], selected: [String]?) -> [Scenario] {
        rotations.filter { selected?.contains($0) ?? true }.flatMap { name in
            [Scenario(rotation: name, passthrough: false), Scenario(rotation: name, passthrough: true)]
        }
    }

    /// The order rows appear in: the baselines, then the attacks as the brief lists them,
    /// then any other profile the proxy knows, by name.
    static let preferredOrder = [
        "passthrough", "forge", "stuff", "self-signed", "wrong-host", "expired", "not-yet-valid",
        "untrusted-ca", "misissued", "fake-parent",
    ]

    /// Whether a row named `a` comes before one named `b`: direct, then ``preferredOrder``,
    /// then any other profile by name.
    static func precedes(_ a: String, _ b: String) -> Bool {
        func rank(_ name: String) -> Int {
            name == directName ? -1 : preferredOrder.firstIndex(of: name) ?? preferredOrder.count
        }
        return rank(a) != rank(b) ? rank(a) < rank(b) : a < b
    }

    /// The matrix for the proxy's `profiles` (every one it knows becomes a scenario),
    /// restricted to `selected` names when given, for each of the device-trust settings
    /// (one row each without a setting: an external client's flags decide its trust).
    public static func matrix(profiles: [AttackProfile], selected: [String]?, deviceTrust: DeviceTrust?) -> [Scenario] {
        var names = profiles.map(\.name)
        names.sort { a, b in precedes(a, b) }
        var routes: [AttackProfile?] = [nil] + names.map { AttackProfile($0) }
        if let selected { routes = routes.filter { selected.contains($0?.name ?? directName) } }
        return routes.flatMap { profile in
            (deviceTrust?.settings.map { Optional($0) } ?? [nil]).map { Scenario(profile: profile, deviceTrustsProxyCA: $0) }
        }
    }
}
