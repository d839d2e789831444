package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPartition(t *testing.T) {
	cases := []struct {
		args      []string
		code      int
		target    string
		stderrHas string
	}{
		{[]string{"-k", "4", "--set", `partition.name="metis"`}, 0, "graph", "partitioner.metis graph of cora"},
		{[]string{"-k", "4", "--batch", "--set", `partition.name="betty-reg"`}, 0, "batch", "redundancy per layer"},
		{[]string{"--set", "train.micro_batches=3", "--set", `partition.name="range"`, "--batch"}, 0, "batch", "k=3"},
		{[]string{"-k", "4"}, 2, "", "partition.name: the config names no partitioner"},
		{[]string{"--set", `partition.name="range"`}, 2, "", "give the number of parts with -k K"},
		{[]string{"--set", `partition.name="range"`, "--set", "train.micro_batches=auto"}, 2, "", `micro_batches = "auto" picks K when training`},
		{[]string{"-k", "99999", "--set", `partition.name="range"`}, 2, "", "k must be <= the number of nodes"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := append([]string{"partition", "-c", "../../configs/gcn-cora.toml"}, c.args...)
			code, stdout, stderr := cli(t, args...)
			if code != c.code || !strings.Contains(stderr, c.stderrHas) {
				t.Fatalf("exit %d (want %d), stderr %q lacks %q", code, c.code, stderr, c.stderrHas)
			}
			if strings.Contains(stderr, "cut=-1") {
				t.Errorf("stderr prints a meaningless edge cut: %q", stderr)
			}
			if c.code != 0 {
				return
			}
			var rep struct {
				Target     string  `json:"target"`
				Nodes      int     `json:"nodes"`
				Redundancy float64 `json:"redundancy"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			if rep.Target != c.target || rep.Nodes == 0 || rep.Redundancy < 1 {
				t.Errorf("report %+v", rep)
			}
		})
	}
}
