package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"strata/core/train"
)

// writePredicted writes predictions.npy and predictions.csv: the classes
// of a classifier (writeClasses), or the targets of a multi-label or
// regression model (writeTargets).
func writePredicted(p *train.Predictions, outDir string, inputs []string) error {
	if p.Targets == "" {
		return writeClasses(p, outDir, inputs)
	}
	if n := len(p.Classes); len(p.Logits) != n*p.Width {
		return fmt.Errorf("predict: %d outputs for %d nodes x %d %s targets", len(p.Logits), n, p.Width, p.Targets)
	}
	return writeTargets(p, outDir, inputs)
}

// writeTargets writes a multi-label model's labels, 1 where the logit is
// at least 0 (uint8, (N, C); csv node,label_0,...), or a regression
// model's values (float32, (N, T); csv node,target_0,...).
func writeTargets(p *train.Predictions, outDir string, inputs []string) error {
	n, c := len(p.Classes), p.Width
	descr, col := "<f4", "target_"
	cell := func(v float64) string { return strconv.FormatFloat(float64(float32(v)), 'g', -1, 32) }
	body := func(bw *bufio.Writer) {
		var b [4]byte
		for _, v := range p.Logits {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(v)))
			bw.Write(b[:])
		}
	}
	if p.Targets != "regression" {
		descr, col = "|u1", "label_"
		cell = func(v float64) string { return strconv.Itoa(label(v)) }
		body = func(bw *bufio.Writer) {
			for _, v := range p.Logits {
				bw.WriteByte(byte(label(v)))
			}
		}
	}
	header := "node"
	for j := range c {
		header += "," + col + strconv.Itoa(j)
	}
	return writePredictionFiles(outDir, []int{n, c}, descr, body, header, func(i int) string {
		cells := make([]string, c)
		for j, v := range p.Logits[i*c : (i+1)*c] {
			cells[j] = cell(v)
		}
		return strings.Join(cells, ",")
	}, inputs)
}

// label is a multi-label prediction: 1 at logit ≥ 0.
func label(logit float64) int {
	if logit >= 0 {
		return 1
	}
	return 0
}
