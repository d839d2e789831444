package layers

// The helpers of the aggregator reference tests, for the suites of package
// layers_test (suite_test.go), which trains through plugins/all and so
// cannot be in package layers.
var (
	AggrRuntime        = aggrRuntime
	AggrGamma          = aggrGamma
	AggrInput          = aggrInput
	AggrTestCSR        = aggrTestCSR
	AggrProgram        = aggrProgram
	ProgramOn          = programOn
	CheckAggrGradients = checkAggrGradients
	Download           = download
	SimMatchesCPU      = simMatchesCPU
	SimBackend         = simBackend

	DecoderGraph          = decoderGraph
	DecForward            = decForward
	DecReferenceCheck     = decReferenceCheck
	ErrNoReference        = errNoReference
	CheckDecoderGradients = checkDecoderGradients
	DecSimAgrees          = decSimAgrees
	CheckDecoderSeeds     = checkDecoderSeeds
)

// AggrNodes and AggrIn are the test graph's nodes and input width.
const (
	AggrNodes = aggrNodes
	AggrIn    = aggrIn
)
