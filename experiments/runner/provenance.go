package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"strata/core/graph"
)

// Provenance is provenance.json: what produced the results, and where.
type Provenance struct {
	Experiment     string    `json:"experiment"`
	File           string    `json:"file"`
	FileSHA256     string    `json:"file_sha256"`
	FileText       string    `json:"file_text"`
	StrataVersion  string    `json:"strata_version"`
	StrataBuild    string    `json:"strata_build"`
	GitRevision    string    `json:"git_revision,omitempty"`
	GitDirty       *bool     `json:"git_dirty,omitempty"`
	GoVersion      string    `json:"go_version"`
	OS             string    `json:"os"`
	Arch           string    `json:"arch"`
	CPUModel       string    `json:"cpu_model,omitempty"`
	Cores          int       `json:"cores"`
	Hostname       string    `json:"hostname,omitempty"`
	Start          time.Time `json:"start"` // of the earliest run, for a resumed experiment
	End            time.Time `json:"end"`   // of the last invocation
	Kind           string    `json:"kind"`
	BaseConfigPath string    `json:"base_config,omitempty"`
	// Datasets are the datasets the runs read, with the SHA-256 of every
	// file the loader reads (or, for a generated one, the generator and
	// its parameters).
	Datasets []DatasetProvenance `json:"datasets"`
	Runs     []ProvenanceRun     `json:"runs"`
}

// DatasetProvenance identifies one dataset the runs read.
type DatasetProvenance struct {
	Spec      string         `json:"spec"` // data.dataset as the runs resolve it
	Runs      int            `json:"runs"` // runs that read it
	Generator string         `json:"generator,omitempty"`
	Files     []FileChecksum `json:"files,omitempty"`
	Error     string         `json:"error,omitempty"` // when its files could not be listed or read
}

// FileChecksum is one file of a dataset.
type FileChecksum struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// ProvenanceRun names one run's stored result and resolved config.
type ProvenanceRun struct {
	Run          int            `json:"run"`
	RunID        string         `json:"run_id"`
	Axes         map[string]any `json:"axes"`
	Seed         int64          `json:"seed"`
	Dataset      string         `json:"dataset"`
	Status       string         `json:"status"`
	ConfigSHA256 string         `json:"config_sha256,omitempty"`
	Started      *time.Time     `json:"started,omitempty"`
	Version      string         `json:"version,omitempty"`
}

func newProvenance(p *Plan, records []*Record, start, end time.Time, m *memo) (*Provenance, error) {
	e := p.Exp
	pv := &Provenance{
		Experiment: e.Name, File: e.File, FileSHA256: e.SHA256, FileText: string(e.Text),
		StrataVersion: p.Version, StrataBuild: p.build(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUModel: cpuModel(), Cores: runtime.NumCPU(), Start: start.UTC(), End: end.UTC(),
		BaseConfigPath: e.BasePath, Kind: e.Kind.Name,
	}
	if m == nil {
		m = &memo{}
	}
	byData := map[string]int{}
	// A resumed experiment started with its earliest run.
	for _, rec := range records {
		if rec != nil && !rec.Started.IsZero() && rec.Started.Before(pv.Start) {
			pv.Start = rec.Started.UTC()
		}
	}
	pv.Hostname, _ = os.Hostname()
	pv.GitRevision, pv.GitDirty = gitState(filepath.Dir(e.File))
	for _, r := range p.Runs {
		spec := datasetSpec(r.Config.DatasetSpec())
		i, ok := byData[spec]
		if !ok {
			i = len(pv.Datasets)
			byData[spec] = i
			pv.Datasets = append(pv.Datasets, m.datasetChecksums(spec))
		}
		pv.Datasets[i].Runs++
		pr := ProvenanceRun{Run: r.Index + 1, RunID: r.ID, Axes: axisMap(r.Cell), Seed: r.Seed, Dataset: spec, Status: "not run"}
		if h, err := r.Config.SHA256(); err == nil {
			pr.ConfigSHA256 = h
		}
		if rec := records[r.Index]; rec != nil {
			pr.Status, pr.Version = rec.Status, rec.Version
			st := rec.Started
			pr.Started = &st
		}
		pv.Runs = append(pv.Runs, pr)
	}
	return pv, nil
}

func marshalProvenance(pv *Provenance) ([]byte, error) {
	b, err := json.MarshalIndent(pv, "", "  ")
	return append(b, '\n'), err
}

// datasetSpec cleans the path part of a dataset spec ("a/../b@split").
func datasetSpec(spec string) string {
	if strings.HasPrefix(spec, "embedded:") || strings.HasPrefix(spec, "rmat-") && !strings.ContainsAny(spec, `/\`) {
		return spec
	}
	p, split, hasSplit := spec, "", false
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		if _, err := os.Stat(spec); err != nil {
			p, split, hasSplit = spec[:i], spec[i+1:], true
		}
	}
	p = filepath.Clean(p)
	if hasSplit {
		return p + "@" + split
	}
	return p
}

// datasetChecksums lists the files of a dataset spec with their SHA-256,
// each file hashed once per invocation (the memo keeps the sums by path).
func (m *memo) datasetChecksums(spec string) DatasetProvenance {
	dp := DatasetProvenance{Spec: spec}
	files, gen, err := graph.Sources(spec)
	if err != nil {
		dp.Error = err.Error()
		return dp
	}
	dp.Generator = gen
	for _, f := range files {
		m.hashMu.Lock()
		sum, ok := m.hashes[f.Name]
		m.hashMu.Unlock()
		if !ok {
			h, n, err := f.SHA256()
			if err != nil {
				dp.Error = err.Error()
				return dp
			}
			sum = FileChecksum{Path: f.Name, Bytes: n, SHA256: h}
			m.hashMu.Lock()
			if m.hashes == nil {
				m.hashes = map[string]FileChecksum{}
			}
			m.hashes[f.Name] = sum
			m.hashMu.Unlock()
		}
		dp.Files = append(dp.Files, sum)
	}
	return dp
}

// cpuModel reads the first "model name" of /proc/cpuinfo (best effort).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// gitState returns the git revision of dir and whether the work tree has
// uncommitted changes (best effort: "" and nil without git).
func gitState(dir string) (string, *bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", nil
	}
	rev := strings.TrimSpace(string(out))
	st, err := exec.CommandContext(ctx, "git", "--no-optional-locks", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return rev, nil
	}
	dirty := len(strings.TrimSpace(string(st))) > 0
	return rev, &dirty
}
