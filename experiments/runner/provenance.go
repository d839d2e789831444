package runner

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"strata/core/graph/formats"
	"strata/core/safefile"
	"strata/experiments/runner/numerics"
)

// Provenance is provenance.json: what produced the results, and where.
type Provenance struct {
	Experiment    string `json:"experiment"`
	File          string `json:"file"`
	FileSHA256    string `json:"file_sha256"`
	FileText      string `json:"file_text"`
	StrataVersion string `json:"strata_version"`
	StrataBuild   string `json:"strata_build"`
	GitRevision   string `json:"git_revision,omitempty"`
	GitDirty      *bool  `json:"git_dirty,omitempty"`
	// RevisionSource says where GitRevision comes from: "git" (the work
	// tree of the experiment file) or "build" (the VCS stamp Go put in the
	// strata binary, outside a git work tree).
	RevisionSource string    `json:"revision_source,omitempty"`
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
	// Revisions lists the source revisions the stored runs ran at, in the
	// order of their first run.
	Revisions []RevisionRuns `json:"revisions"`
	// Numerics are the kernel choices of the runs (the pinned
	// environment and OpenBLAS's kernel family), Binary the digest of the
	// strata executable and its libraries (BinaryDigest); --check
	// compares the numerics with its own.
	Numerics *numerics.Numerics `json:"numerics,omitempty"`
	Binary   string             `json:"binary_sha256,omitempty"`
	Runs     []ProvenanceRun    `json:"runs"`
}

// RevisionRuns counts the runs that ran at one revision.
type RevisionRuns struct {
	Revision string `json:"revision"` // "" for runs recorded before revisions were
	Dirty    *bool  `json:"dirty,omitempty"`
	Runs     int    `json:"runs"`
}

// Revision is the source revision a run ran at.
type Revision struct {
	Revision string
	Dirty    *bool
	Source   string // "git" or "build"; "" when unknown
}

// sourceRevision returns the git revision of the work tree holding dir and
// whether it has uncommitted changes (tracked or untracked files, the
// exclude paths left out: the results being written do not make the
// tree dirty); outside a git work tree (or without git), the revision Go
// stamped into the running binary when it was built from one
// (runtime/debug.ReadBuildInfo: vcs.revision, vcs.modified).
func sourceRevision(dir string, exclude ...string) Revision {
	if t := readGitTree(dir, exclude...); t.Head != "" {
		r := Revision{Revision: t.Head, Source: "git"}
		if t.Complete {
			d := len(t.Changes) > 0
			r.Dirty = &d
		}
		return r
	}
	return buildRevision()
}

// buildRevision reads the VCS stamp of the running binary.
func buildRevision() Revision {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Revision{}
	}
	var r Revision
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			r.Revision = s.Value
		case "vcs.modified":
			d := s.Value == "true"
			r.Dirty = &d
		}
	}
	if r.Revision == "" {
		return Revision{}
	}
	r.Source = "build"
	return r
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
	Revision     string         `json:"revision,omitempty"`
	Dirty        *bool          `json:"dirty,omitempty"`
	// ExpectedFailure is why the experiment expects the run to fail
	// ([[expected_failure]]), for a run that failed.
	ExpectedFailure string `json:"expected_failure,omitempty"`
}

// newProvenance describes the results. A zero end means that this
// invocation ran nothing: the environment of the invocation that did
// (machine, build, revision, dates) is then taken from prev, the
// provenance.json already written, so that the file and report.html stay
// byte-identical; without prev it is the current one.
func newProvenance(p *Plan, records []*Record, out string, start, end time.Time, m *memo, prev *Provenance) (*Provenance, error) {
	if end.IsZero() {
		end = time.Now()
	} else {
		prev = nil
	}
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
	rev := sourceRevision(filepath.Dir(e.File), resultsDirs(e, out)...)
	pv.GitRevision, pv.GitDirty, pv.RevisionSource = rev.Revision, rev.Dirty, rev.Source
	pv.Numerics, pv.Binary = runsNumerics(records)
	if prev != nil {
		pv.StrataVersion, pv.StrataBuild, pv.GoVersion, pv.OS, pv.Arch = prev.StrataVersion, prev.StrataBuild, prev.GoVersion, prev.OS, prev.Arch
		pv.CPUModel, pv.Cores, pv.Hostname, pv.Start, pv.End = prev.CPUModel, prev.Cores, prev.Hostname, prev.Start, prev.End
		pv.GitRevision, pv.GitDirty, pv.RevisionSource = prev.GitRevision, prev.GitDirty, prev.RevisionSource
	}
	revIndex := map[string]int{}
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
			pr.Status, pr.Version, pr.Revision, pr.Dirty = rec.Status, rec.Version, rec.Revision, rec.Dirty
			pr.ExpectedFailure = rec.Expected
			st := rec.Started
			pr.Started = &st
			key := rec.Revision + "|" + dirtyKey(rec.Dirty)
			i, ok := revIndex[key]
			if !ok {
				i = len(pv.Revisions)
				revIndex[key] = i
				pv.Revisions = append(pv.Revisions, RevisionRuns{Revision: rec.Revision, Dirty: rec.Dirty})
			}
			pv.Revisions[i].Runs++
		}
		pv.Runs = append(pv.Runs, pr)
	}
	return pv, nil
}

// dirtyKey spells a dirty flag for grouping.
func dirtyKey(b *bool) string {
	if b == nil {
		return "?"
	}
	return strconv.FormatBool(*b)
}

// ReadProvenance reads a provenance.json (nil when absent or unreadable).
func ReadProvenance(path string) *Provenance {
	b, err := safefile.ReadFile(path, MaxResultBytes)
	if err != nil {
		return nil
	}
	var pv Provenance
	if json.Unmarshal(b, &pv) != nil {
		return nil
	}
	return &pv
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
	files, gen, err := formats.Sources(spec)
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

// runsNumerics returns the numerics and binary digest the stored runs
// ran with: those of the first run that records them (a result set holds
// runs of one code key, so of one numerics and binary).
func runsNumerics(records []*Record) (*numerics.Numerics, string) {
	for _, rec := range records {
		if rec != nil && rec.Numerics != nil {
			return rec.Numerics, rec.Binary
		}
	}
	return nil, ""
}
