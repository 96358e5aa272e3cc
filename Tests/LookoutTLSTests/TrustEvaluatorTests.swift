import Testing
import LookoutTLS

@Suite struct TrustEvaluatorTests {
    let pki = TestPKI.shared
    let host = TestPKI.host

    func reason(_ evaluator: some ServerTrustEvaluator, _ chain: [Certificate], host: String? = nil,
                now: Int64? = nil) -> TrustEvaluationError.Reason? {
        do {
            try evaluator.evaluate(chain, host: host ?? self.host, now: now ?? pki.now)
            return nil
        } catch {
            return error.reason
        }
    }

    func error(_ evaluator: some ServerTrustEvaluator, _ chain: [Certificate], host: String? = nil) -> TrustEvaluationError? {
        do {
            try evaluator.evaluate(chain, host: host ?? self.host, now: pki.now)
            return nil
        } catch {
            return error
        }
    }

    @Test func defaultPassesAValidChain() throws {
        let evaluator = DefaultTrustEvaluator(trustStore: try pki.trustStore())
        #expect(evaluator.name == "default")
        #expect(reason(evaluator, [pki.leaf, pki.intermediate]) == nil)
        #expect(reason(evaluator, [pki.leaf, pki.intermediate, pki.root]) == nil)
        #expect(reason(evaluator, [pki.leaf, pki.intermediate], host: "EXAMPLE.test.") == nil)
        #expect(reason(evaluator, [pki.wildcardLeaf, pki.intermediate], host: "a.example.test") == nil)
        #expect(reason(evaluator, [pki.ipLeaf, pki.intermediate], host: "127.0.0.1") == nil)
        #expect(reason(evaluator, [pki.ipLeaf, pki.intermediate], host: "[::1]") == nil)
        // The real clock works too (the evaluate(_:host:) extension).
        try evaluator.evaluate([pki.leaf, pki.intermediate], host: host)
    }

    @Test func defaultFailsWithTheRightReason() throws {
        let evaluator = DefaultTrustEvaluator(trustStore: try pki.trustStore())
        #expect(reason(evaluator, [pki.expiredLeaf, pki.intermediate]) == .expired)
        #expect(reason(evaluator, [pki.notYetValidLeaf, pki.intermediate]) == .notYetValid)
        #expect(reason(evaluator, [pki.wrongHostLeaf, pki.intermediate]) == .hostnameMismatch)
        #expect(reason(evaluator, [pki.selfSignedLeaf]) == .selfSigned)
        #expect(reason(evaluator, [pki.untrustedLeaf]) == .untrustedRoot)
        #expect(reason(evaluator, [pki.untrustedLeaf, pki.otherRoot]) == .untrustedRoot)
        #expect(reason(evaluator, [pki.leaf]) == .untrustedRoot)   // intermediate missing
        #expect(reason(evaluator, []) == .noCertificates)
        // Wildcards cover exactly one label.
        #expect(reason(evaluator, [pki.wildcardLeaf, pki.intermediate], host: "a.b.example.test") == .hostnameMismatch)
        #expect(reason(evaluator, [pki.wildcardLeaf, pki.intermediate], host: "example.test") == .hostnameMismatch)
        // IP hosts need IP SANs; a DNS SAN with the same text does not count.
        #expect(reason(evaluator, [pki.ipLeaf, pki.intermediate], host: "127.0.0.2") == .hostnameMismatch)
        #expect(reason(evaluator, [pki.leaf, pki.intermediate], host: "127.0.0.1") == .hostnameMismatch)
        // A leaf is not a CA: a chain "issued" by it is invalid. Time travel expires the root.
        #expect(reason(evaluator, [pki.leaf, pki.intermediate], now: pki.now + 4000 * 86_400) == .expired)
        #expect(reason(DefaultTrustEvaluator(trustStore: try TrustStore(anchors: [pki.otherRoot])),
                       [pki.leaf, pki.intermediate]) == .untrustedRoot)
    }

    @Test func defaultMessagesCarryOpenSSLText() throws {
        let evaluator = DefaultTrustEvaluator(trustStore: try pki.trustStore())
        let expired = try #require(error(evaluator, [pki.expiredLeaf, pki.intermediate]))
        #expect(expired.message.contains("certificate has expired"))
        #expect(expired.verifyErrorCode == 10)  // X509_V_ERR_CERT_HAS_EXPIRED
        #expect(expired.evaluator == "default")
        #expect(expired.code == "expired")
        let mismatch = try #require(error(evaluator, [pki.wrongHostLeaf, pki.intermediate]))
        #expect(mismatch.message.contains("hostname mismatch"))
        #expect(mismatch.message.contains("DNS:other.example.test"))
        let selfSigned = try #require(error(evaluator, [pki.selfSignedLeaf]))
        #expect(selfSigned.message.contains("self-signed certificate") || selfSigned.message.contains("self signed certificate"))
        let untrusted = try #require(error(evaluator, [pki.leaf]))
        #expect(untrusted.message.contains("unable to get local issuer certificate"))
        #expect(String(describing: untrusted).hasPrefix("untrusted_root: "))
    }

    @Test func partialChainsNeedTheFlag() throws {
        let strict = DefaultTrustEvaluator(trustStore: try TrustStore(anchors: [pki.intermediate]))
        #expect(reason(strict, [pki.leaf]) == .untrustedRoot)
        let partial = DefaultTrustEvaluator(trustStore: try TrustStore(anchors: [pki.intermediate], allowsPartialChains: true))
        #expect(reason(partial, [pki.leaf]) == nil)
        #expect(reason(partial, [pki.expiredLeaf]) == .expired)
    }

    @Test func defaultWithoutHostValidation() throws {
        let evaluator = DefaultTrustEvaluator(trustStore: try pki.trustStore(), validatesHost: false)
        #expect(reason(evaluator, [pki.wrongHostLeaf, pki.intermediate]) == nil)
        #expect(reason(evaluator, [pki.expiredLeaf, pki.intermediate]) == .expired)
    }

    @Test func publicKeysMatchAnyCertificateInTheChain() throws {
        let leafPin = pki.leaf.publicKeyPin
        let intermediatePin = pki.intermediate.publicKeyPin
        let backup = pki.otherKey.publicKeyPin
        #expect(reason(PublicKeysTrustEvaluator(pins: [leafPin]), [pki.leaf, pki.intermediate]) == nil)
        #expect(reason(PublicKeysTrustEvaluator(pins: [intermediatePin]), [pki.otherKeyLeaf, pki.intermediate]) == nil)
        #expect(reason(PublicKeysTrustEvaluator(pins: [backup, leafPin]), [pki.leaf]) == nil)   // backup pin first
        #expect(reason(PublicKeysTrustEvaluator(pins: [leafPin]), [pki.otherKeyLeaf, pki.intermediate]) == .pinMismatch)
        #expect(reason(PublicKeysTrustEvaluator(pins: []), [pki.leaf]) == .pinMismatch)
        #expect(reason(PublicKeysTrustEvaluator(pins: [leafPin]), []) == .noCertificates)
        // Pins say nothing about validity: an expired leaf with the pinned key passes pinning.
        #expect(reason(PublicKeysTrustEvaluator(pins: [leafPin]), [pki.expiredLeaf]) == nil)
        let failure = try #require(error(PublicKeysTrustEvaluator(pins: [leafPin]), [pki.otherKeyLeaf, pki.intermediate]))
        #expect(failure.message.contains(pki.otherKeyLeaf.spkiSHA256Pin))
        #expect(failure.message.contains(leafPin.description))
        #expect(failure.evaluator == "public-keys")
        // curl spelling.
        let curl = try PublicKeyPin("sha256//" + leafPin.description.dropFirst("sha256/".count))
        #expect(reason(PublicKeysTrustEvaluator(pins: [curl]), [pki.leaf]) == nil)
    }

    @Test func pinnedCertificatesNeedDEREquality() throws {
        let evaluator = PinnedCertificatesTrustEvaluator(certificates: [pki.leaf])
        #expect(evaluator.name == "pinned-certificates")
        #expect(reason(evaluator, [pki.leaf, pki.intermediate]) == nil)
        #expect(reason(PinnedCertificatesTrustEvaluator(certificates: [pki.intermediate]), [pki.otherKeyLeaf, pki.intermediate]) == nil)
        // Same key, different certificate: not equal.
        #expect(reason(evaluator, [pki.expiredLeaf, pki.intermediate]) == .pinMismatch)
        #expect(reason(evaluator, [pki.otherKeyLeaf]) == .pinMismatch)
        #expect(reason(evaluator, []) == .noCertificates)
        #expect(reason(PinnedCertificatesTrustEvaluator(certificates: [try Certificate(pem: pki.leaf.pemString)]), [pki.leaf]) == nil)
    }

    @Test func compositeRequiresAll() throws {
        let standard = DefaultTrustEvaluator(trustStore: try pki.trustStore())
        let pins = PublicKeysTrustEvaluator(pins: [pki.leaf.publicKeyPin])
        let composite = CompositeTrustEvaluator([standard, pins])
        #expect(composite.name == "composite(default, public-keys)")
        #expect(reason(composite, [pki.leaf, pki.intermediate]) == nil)
        #expect(reason(composite, [pki.otherKeyLeaf, pki.intermediate]) == .pinMismatch)
        #expect(reason(composite, [pki.expiredLeaf, pki.intermediate]) == .expired)
        // A pin mismatch never hides a more basic failure, whatever the order.
        let reversed = CompositeTrustEvaluator([PublicKeysTrustEvaluator(pins: [pki.otherKey.publicKeyPin]), standard])
        let both = try #require(error(reversed, [pki.expiredLeaf, pki.intermediate]))
        #expect(both.reason == .expired)
        #expect(both.evaluator == "default")
        #expect(both.message.contains("pin_mismatch"))
        #expect(reason(CompositeTrustEvaluator([]), []) == nil)
    }

    @Test func disabledPassesEverything() {
        let evaluator = DisabledTrustEvaluator()
        #expect(evaluator.name == "disabled")
        #expect(reason(evaluator, []) == nil)
        #expect(reason(evaluator, [pki.expiredLeaf]) == nil)
        #expect(reason(evaluator, [pki.untrustedLeaf], host: "anything") == nil)
    }

    @Test func reasonCodesAreStable() {
        #expect(TrustEvaluationError.Reason.allCases.map(\.rawValue) == [
            "pin_mismatch", "expired", "not_yet_valid", "hostname_mismatch", "untrusted_root",
            "self_signed", "revoked", "revocation_unavailable", "invalid_chain", "no_certificates",
        ])
    }
}
