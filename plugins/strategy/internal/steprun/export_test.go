package steprun

// SetLayerwiseBudget makes layer-wise inference on the host split every
// layer into node ranges of at most b estimated bytes.
func SetLayerwiseBudget(r *Runner, b int64) { r.lw.budget = b }

// LayerwiseChunks returns the node ranges each layer ran in at the last
// layer-wise evaluation.
func LayerwiseChunks(r *Runner) [][][]int32 { return r.lw.chunks }

// BalancedRanges is balancedRanges.
var BalancedRanges = balancedRanges

// LayerwiseBudget is layerwiseBudget.
var LayerwiseBudget = layerwiseBudget
