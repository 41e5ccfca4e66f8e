@testable import PinproxyProxy
import Testing

/// The link that closures on a connection's events hold to it: the object
/// while it lives, nil once its deinit severed the link, and never a strong
/// reference of its own (a closure holding the link does not keep it alive).
@Suite struct OwnerLinkTests {
    final class Owner {
        let link = OwnerLink<Owner>()
        var calls = 0
        init() { link.attach(self) }
        deinit { link.sever() }
    }

    @Test func givesTheObjectWhileItLivesAndNilOnceItIsGone() {
        var owner: Owner? = Owner()
        let link = owner!.link
        let callback = { link.object?.calls += 1 }
        callback()
        callback()
        #expect(owner?.calls == 2)
        #expect(link.object === owner)
        owner = nil  // the callback's link does not keep it
        #expect(link.object == nil)
        callback()  // a late callback finds nothing
    }

    @Test func anUnattachedLinkIsNil() {
        #expect(OwnerLink<Owner>().object == nil)
    }
}
