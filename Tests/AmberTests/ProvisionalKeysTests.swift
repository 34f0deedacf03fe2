import Testing
@testable import AmberStore

/// `ProvisionalKeys` against a plain dictionary: close keys (the array),
/// spread keys (the dictionary), keys at the ends of Int64, and lookups of
/// keys it does not hold.
@Suite struct ProvisionalKeysTests {
    @Test func looksUpWhatADictionaryWould() {
        var random = SplitMix64(seed: 7)
        for round in 0..<300 {
            let count = Int.random(in: 0...200, using: &random)
            let start = -Int64.random(in: 1...1_000_000, using: &random)
            var keys: [Int64]
            switch round % 3 {
            case 0: keys = (0..<count).map { start - Int64($0) * Int64.random(in: 1...3, using: &random) }  // close: the array
            case 1: keys = (0..<count).map { _ in -Int64.random(in: 1...Int64.max, using: &random) }  // spread: the dictionary
            default: keys = [Int64.min, -1] + (0..<count).map { _ in start - Int64.random(in: 0...300, using: &random) }
            }
            var reference: [Int64: Int64] = [:]
            let pairs = keys.map { key in (key: key, primaryKey: Int64.random(in: 1...Int64.max, using: &random)) }
            for pair in pairs { reference[pair.key] = pair.primaryKey }
            let map = ProvisionalKeys(pairs)
            #expect(map.isEmpty == reference.isEmpty)
            let probes = keys + [0, 1, Int64.min, Int64.max, -1, start + 1, start - 10_000] + (0..<50).map { _ in Int64.random(in: start - 1_000...start, using: &random) }
            for probe in probes where map[probe] != reference[probe] {
                Issue.record("round \(round): key \(probe) gave \(String(describing: map[probe])), expected \(String(describing: reference[probe]))")
                return
            }
        }
    }
}
