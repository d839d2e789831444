package metrics

// r2 and mse: the regression metrics. r2 is the coefficient of
// determination 1 − Σ(y−ŷ)²/Σ(y−ȳ)² of each target column over the
// split, averaged over the columns (scikit-learn's r2_score,
// multioutput="uniform_average"); a column whose targets are all equal
// scores 1 when predicted exactly and 0 otherwise (its force_finite). mse
// is the mean squared error (the regression loss).
func init() {
	Register(Metric{Name: "r2", Doc: "coefficient of determination R² of the outputs against the regression targets (mean over target columns)",
		Tasks: []Task{TaskRegression}, Compute: r2})
	Register(Metric{Name: "mse", Doc: "mean squared error of the outputs against the regression targets", Lower: true,
		Tasks: []Task{TaskRegression}, Compute: meanSquaredError})
}

func r2(s Split) float64 {
	c := s.Classes
	mean := make([]float64, c)
	s.eachTarget(func(j int, _, y float64) { mean[j] += y })
	for j := range mean {
		mean[j] /= float64(len(s.Idx))
	}
	res, tot := make([]float64, c), make([]float64, c)
	s.eachTarget(func(j int, x, y float64) {
		res[j] += (y - x) * (y - x)
		tot[j] += (y - mean[j]) * (y - mean[j])
	})
	return perLabel(c, func(j int) float64 {
		switch {
		case tot[j] > 0:
			return 1 - res[j]/tot[j]
		case res[j] == 0:
			return 1
		}
		return 0
	})
}
