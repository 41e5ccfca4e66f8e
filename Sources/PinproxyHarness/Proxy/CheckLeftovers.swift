import Foundation
import PinproxyProxy

/// What a `pinproxy check` sets on a running daemon, marked so that one killed before it
/// could put things back (SIGKILL, a crash) is visible and a later check can undo it.
///
/// Each rule the harness adds carries the owner `pinproxy check pid N` (shown by
/// `GET /rules`). A rule whose process is gone is left over: a later check against the same
/// daemon removes it, and the resolve entry for its host when that still points at the
/// harness's loopback origin (the address the killed check set; what it replaced is lost).
/// Rules of a check still running are kept, and a new check waits for that one to finish
/// (``ControlAPIProxy``). The process test assumes the daemon and its
/// checks share a machine, as the loopback origin requires.
enum CheckLeftovers {
    static let ownerPrefix = "pinproxy check pid "

    /// The owner this process's rules carry.
    static var owner: String { ownerPrefix + String(getpid()) }

    /// The process that set a rule owned by `owner`, when a check did.
    static func pid(of owner: String?) -> pid_t? {
        guard let owner, owner.hasPrefix(ownerPrefix) else { return nil }
        return pid_t(owner.dropFirst(ownerPrefix.count))
    }

    /// Whether process `pid` is gone.
    static func isGone(_ pid: pid_t) -> Bool {
        pid > 0 && kill(pid, 0) != 0 && errno == ESRCH
    }

    /// The owner of a rule that another check, still running, set (`pinproxy check pid N`);
    /// nil when there is none. This process's own rules do not count.
    static func liveOwner(in rules: InterceptionRules) -> String? {
        rules.rules.first { rule in
            guard let pid = pid(of: rule.owner) else { return false }
            return pid != getpid() && !isGone(pid)
        }?.owner
    }

    /// `rules` and `resolve` without what a check that is gone left, and a line per entry removed.
    static func removing(from rules: InterceptionRules, resolve: [String: String]?, originAddress: String)
        -> (rules: InterceptionRules, resolve: [String: String]?, removed: [String]) {
        var rules = rules, resolve = resolve, removed: [String] = []
        rules.rules.removeAll { rule in
            guard let pid = pid(of: rule.owner), isGone(pid) else { return false }
            removed.append("rule \(rule.pattern) → \(rule.profile) (set by \(rule.owner ?? ""))")
            let host = rule.pattern.description
            if resolve?[host] == originAddress {
                resolve?[host] = nil
                removed.append("resolve \(host) → \(originAddress)")
            }
            return true
        }
        return (rules, resolve, removed)
    }
}
