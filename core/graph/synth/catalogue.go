package synth

import "strata/core/graph"

// quarterSplit is HongTu's split of graphs without labels (§6: random
// labels, 25% train, 50% validation, 25% test).
func quarterSplit(s StandIn) StandIn {
	s.Train, s.Valid = s.Nodes/4, s.Nodes/2
	s.Test = s.Nodes - s.Train - s.Valid
	return s
}

// standIns returns the graphs of the seed papers, with the counts their
// papers (and the graphs' own sites) state, and the degree shape of a
// real graph of the same kind measured in shared/data with `strata
// inspect` (its shape line: the endpoint shares of the top 1% and 10% of
// nodes by in- plus out-degree). A function, so that no caller can change
// the catalogue.
func standIns() []StandIn {
	var (
		citationShape = graph.DegreeShape{Top1: 0.112, Top10: 0.489} // PubMed (citations)
		purchaseShape = graph.DegreeShape{Top1: 0.141, Top10: 0.421} // Amazon Computers (co-purchases)
		socialShape   = graph.DegreeShape{Top1: 0.230, Top10: 0.641} // soc-Slashdot0902 (friend/foe links)
		followShape   = graph.DegreeShape{Top1: 0.144, Top10: 0.490} // ego-Twitter (follows)
		webShape      = graph.DegreeShape{Top1: 0.313, Top10: 0.573} // cnr-2000 (a LAW web crawl, as it-2004 and uk-2006-05)
	)
	return []StandIn{
		{Name: "ogbn-arxiv", Nodes: 169_343, Edges: 1_166_243, Directed: true, FeatDim: 128, Classes: 40,
			Train: 90_941, Valid: 29_799, Test: 48_603, Shape: citationShape,
			Source: "OGB (Hu et al., NeurIPS 2020); Betty Table 4 counts both directions (2,315,598); degree shape of PubMed"},
		{Name: "ogbn-products", Nodes: 2_449_029, Edges: 61_859_140, FeatDim: 100, Classes: 47,
			Train: 196_615, Valid: 39_323, Test: 2_213_091, Shape: purchaseShape,
			Source: "OGB (Hu et al., NeurIPS 2020); HongTu Table 4, HyScale-GNN Table III, Betty Table 4; degree shape of Amazon Computers"},
		{Name: "reddit", Nodes: 232_965, Edges: 57_307_946, FeatDim: 602, Classes: 41,
			Train: 153_431, Valid: 23_831, Test: 55_703, Shape: socialShape,
			Source: "Hamilton et al., NeurIPS 2017; HongTu Table 4 and Betty Table 4 count both directions (114,615,892); degree shape of soc-Slashdot0902"},
		{Name: "ogbn-papers100M", Nodes: 111_059_956, Edges: 1_615_685_872, Directed: true, FeatDim: 128, Classes: 172,
			Train: 1_207_179, Valid: 125_265, Test: 214_338, Shape: citationShape,
			Source: "OGB (Hu et al., NeurIPS 2020); HyScale-GNN Table III, XGNN Table 3, data tiering Table 1 (both directions); degree shape of PubMed"},
		{Name: "mag240m-homo", Nodes: 121_751_666, Edges: 1_297_748_926, Directed: true, FeatDim: 756, Classes: 153,
			Train: 1_112_392, Valid: 138_949, Test: 88_092, Shape: citationShape,
			Source: "OGB-LSC MAG240M, its paper-to-paper graph as HyScale-GNN Table III states it; degree shape of PubMed"},
		quarterSplit(StandIn{Name: "it-2004", Nodes: 41_291_594, Edges: 1_150_725_436, Directed: true, FeatDim: 256, Classes: 64,
			Shape: webShape, Source: "LAW (Boldi and Vigna, WWW 2004); HongTu Table 4 (random features and labels, 25/50/25 split); degree shape of cnr-2000"}),
		quarterSplit(StandIn{Name: "uk-2006-05", Nodes: 77_741_046, Edges: 2_965_197_340, Directed: true, FeatDim: 256, Classes: 64,
			Shape: webShape, Source: "LAW; XGNN Table 3 (random features; labels and split as HongTu's); degree shape of cnr-2000"}),
		quarterSplit(StandIn{Name: "friendster", Nodes: 65_608_366, Edges: 1_806_067_135, FeatDim: 256, Classes: 64,
			Shape: socialShape, Source: "SNAP com-Friendster (Yang and Leskovec, ICDM 2012); HongTu Table 4 (random features and labels, 25/50/25 split); degree shape of soc-Slashdot0902"}),
		quarterSplit(StandIn{Name: "twitter", Nodes: 41_652_230, Edges: 1_468_365_182, Directed: true, FeatDim: 256, Classes: 64,
			Shape: followShape, Source: "Kwak et al., WWW 2010; XGNN Table 3 (random features; labels and split as HongTu's); degree shape of ego-Twitter"}),
	}
}

// StandInNames lists the stand-ins' names.
func StandInNames() []string {
	all := standIns()
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	return names
}
