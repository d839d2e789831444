package steprun

// SetLayerwiseBudget makes layer-wise inference on the host split every
// layer into node ranges of at most b estimated bytes.
func SetLayerwiseBudget(r *Runner, b int64) { r.lw.budget = b }

// SetLayerwiseSampled makes layer-wise inference run every chunk over
// its sampled one-hop block, never reading rows in place.
func SetLayerwiseSampled(r *Runner) { r.lw.sampled = true }

// RowsOf is rowsOf.
var RowsOf = rowsOf

// RangeBudget is rangeBudget.
var RangeBudget = rangeBudget

// LayerwiseChunks returns the node ranges each layer ran in at the last
// layer-wise evaluation.
func LayerwiseChunks(r *Runner) [][][]int32 { return r.lw.chunks }

// BalancedRanges is balancedRanges.
var BalancedRanges = balancedRanges

// LayerwiseBudget is layerwiseBudget.
var LayerwiseBudget = layerwiseBudget
