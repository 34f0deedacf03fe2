/// The sizes of a live query's result chunks as a Fenwick tree: how many
/// results come before a chunk, and which chunk holds a given result, each
/// in O(log chunks), so following a change does not walk every chunk.
/// Adding or dropping a chunk (every few hundred inserts or removals) builds
/// the tree again.
struct ChunkSizes {
    /// One-based: `tree[i]` sums the sizes of chunks `i - lowbit(i) ..< i`.
    private var tree: [Int]

    init(_ sizes: [Int]) {
        tree = [0] + sizes
        for i in tree.indices.dropFirst() {
            let parent = i + (i & -i)
            if parent < tree.count { tree[parent] += tree[i] }
        }
    }

    /// Records that chunk `chunk` grew by `delta` (negative when it shrank).
    mutating func add(_ delta: Int, at chunk: Int) {
        var i = chunk + 1
        while i < tree.count {
            tree[i] += delta
            i += i & -i
        }
    }

    /// The number of results in the chunks before `chunk`.
    func before(_ chunk: Int) -> Int {
        var i = chunk, sum = 0
        while i > 0 {
            sum += tree[i]
            i -= i & -i
        }
        return sum
    }

    /// The chunk holding result `index` (in `0..<total`) and its offset there.
    func locate(_ index: Int) -> (chunk: Int, offset: Int) {
        // The most chunks whose results all come before `index`: empty chunks are stepped over.
        var chunks = 0, rest = index
        var step = 1
        while step * 2 < tree.count { step *= 2 }
        while step > 0 {
            if chunks + step < tree.count, tree[chunks + step] <= rest {
                chunks += step
                rest -= tree[chunks]
            }
            step /= 2
        }
        return (chunks, rest)
    }
}
