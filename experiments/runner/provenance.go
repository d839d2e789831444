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
)

// Provenance is provenance.json: what produced the results, and where.
type Provenance struct {
	Experiment     string          `json:"experiment"`
	File           string          `json:"file"`
	FileSHA256     string          `json:"file_sha256"`
	FileText       string          `json:"file_text"`
	StrataVersion  string          `json:"strata_version"`
	StrataBuild    string          `json:"strata_build"`
	GitRevision    string          `json:"git_revision,omitempty"`
	GitDirty       *bool           `json:"git_dirty,omitempty"`
	GoVersion      string          `json:"go_version"`
	OS             string          `json:"os"`
	Arch           string          `json:"arch"`
	CPUModel       string          `json:"cpu_model,omitempty"`
	Cores          int             `json:"cores"`
	Hostname       string          `json:"hostname,omitempty"`
	Start          time.Time       `json:"start"` // of the earliest run, for a resumed experiment
	End            time.Time       `json:"end"`   // of the last invocation
	Runs           []ProvenanceRun `json:"runs"`
	BaseConfigPath string          `json:"base_config,omitempty"`
}

// ProvenanceRun names one run's stored result and resolved config.
type ProvenanceRun struct {
	Run          int            `json:"run"`
	RunID        string         `json:"run_id"`
	Axes         map[string]any `json:"axes"`
	Seed         int64          `json:"seed"`
	Status       string         `json:"status"`
	ConfigSHA256 string         `json:"config_sha256,omitempty"`
	Started      *time.Time     `json:"started,omitempty"`
	Version      string         `json:"version,omitempty"`
}

func provenanceJSON(p *Plan, records []*Record, start, end time.Time) ([]byte, error) {
	e := p.Exp
	pv := Provenance{
		Experiment: e.Name, File: e.File, FileSHA256: e.SHA256, FileText: string(e.Text),
		StrataVersion: p.Version, StrataBuild: p.build(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUModel: cpuModel(), Cores: runtime.NumCPU(), Start: start.UTC(), End: end.UTC(),
		BaseConfigPath: e.BasePath,
	}
	// A resumed experiment started with its earliest run.
	for _, rec := range records {
		if rec != nil && !rec.Started.IsZero() && rec.Started.Before(pv.Start) {
			pv.Start = rec.Started.UTC()
		}
	}
	pv.Hostname, _ = os.Hostname()
	pv.GitRevision, pv.GitDirty = gitState(filepath.Dir(e.File))
	for _, r := range p.Runs {
		pr := ProvenanceRun{Run: r.Index + 1, RunID: r.ID, Axes: axisMap(r.Cell), Seed: r.Seed, Status: "not run"}
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
	b, err := json.MarshalIndent(pv, "", "  ")
	return append(b, '\n'), err
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
