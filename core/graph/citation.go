package graph

// KnownCitation returns the citation of the benchmark datasets in shared/data.
func KnownCitation(name string) string {
	const planetoidSplit = `Yang, Cohen, Salakhutdinov, "Revisiting Semi-Supervised Learning with Graph Embeddings", ICML 2016`
	const shchur = `Shchur, Mumme, Bojchevski, Günnemann, "Pitfalls of Graph Neural Network Evaluation", R2L workshop 2018`
	switch name {
	case "cora":
		return `McCallum, Nigam, Rennie, Seymore, "Automating the Construction of Internet Portals with Machine Learning", Information Retrieval 2000; ` +
			`Sen et al., "Collective Classification in Network Data", AI Magazine 2008; split: ` + planetoidSplit
	case "citeseer":
		return `Giles, Bollacker, Lawrence, "CiteSeer: An Automatic Citation Indexing System", ACM DL 1998; ` +
			`Sen et al., "Collective Classification in Network Data", AI Magazine 2008; split: ` + planetoidSplit
	case "pubmed":
		return `Namata, London, Getoor, Huang, "Query-driven Active Surveying for Collective Classification", MLG 2012; split: ` + planetoidSplit
	case "ogbn-arxiv":
		return `Hu et al., "Open Graph Benchmark: Datasets for Machine Learning on Graphs", NeurIPS 2020; ` +
			`Wang et al., "Microsoft Academic Graph: When experts are not enough", Quantitative Science Studies 2020`
	case "amazon-computers":
		return shchur + `; McAuley, Targett, Shi, van den Hengel, "Image-based Recommendations on Styles and Substitutes", SIGIR 2015`
	case "coauthor-physics":
		return shchur + `; data from the Microsoft Academic Graph (KDD Cup 2016)`
	case "ego-twitter":
		return `McAuley, Leskovec, "Learning to Discover Social Circles in Ego Networks", NIPS 2012; Leskovec, Krevl, SNAP Datasets, 2014`
	case "soc-slashdot0902", "soc-Slashdot0902":
		return `Leskovec, Lang, Dasgupta, Mahoney, "Community Structure in Large Networks: Natural Cluster Sizes and the Absence of Large Well-Defined Clusters", Internet Mathematics 2009`
	case "cnr-2000":
		return `Boldi, Vigna, "The WebGraph Framework I: Compression Techniques", WWW 2004; ` +
			`Boldi, Codenotti, Santini, Vigna, "UbiCrawler: A Scalable Fully Distributed Web Crawler", Software: Practice & Experience 2004`
	}
	return ""
}
