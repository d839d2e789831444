package graph

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

func BenchmarkMicroFeat(b *testing.B) {
	f, _ := os.Open("/work/shared/data/coauthor-physics/raw/node-feat.csv.gz")
	z, _ := gzip.NewReader(f)
	buf := make([]byte, 8<<20)
	n, _ := io.ReadFull(z, buf)
	buf = buf[:bytes.LastIndexByte(buf[:n], '\n')+1]
	lines := bytes.Count(buf, []byte{'\n'})
	feats := make([]float32, lines*8415)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := parseFeatureChunk(&lineChunk{data: buf, line: 1}, "x", lines, 8415, feats); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(lines*8415), "ns/field")
}
