package train

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"strata/core/config"
	"strata/core/safefile"
)

// fullDisk is a writer whose every write fails with ENOSPC.
type fullDisk struct{}

func (fullDisk) Write(p []byte) (int, error) { return 0, fmt.Errorf("write: %w", syscall.ENOSPC) }

// TestCSVDiskFull injects a full disk under output.csv: the first row's
// write fails at once (not after all epochs), and neither a partial file
// nor a temporary one is left; a second writer is locked out meanwhile.
func TestCSVDiskFull(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "c.toml")
	text := "[data]\ndataset = \"embedded:cora\"\n[output]\ncsv = \"m.csv\"\n"
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	out, err := openCSV(cfg, cfg.CSVPath())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openCSV(cfg, cfg.CSVPath()); !errors.Is(err, safefile.ErrLocked) {
		t.Errorf("second writer: err = %v, want ErrLocked", err)
	}
	out.w = csv.NewWriter(fullDisk{})
	if err := out.write([]string{"epoch", "loss"}); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "m.csv") {
		t.Errorf("err = %v, want ENOSPC naming the file", err)
	}
	out.close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left %d entries, want only the config", len(ents))
	}
}

// TestEmptySplitsAreNull checks that the accuracy of an empty valid or
// test split is encoded as null (absent), never as 0.
func TestEmptySplitsAreNull(t *testing.T) {
	r := Result{Dataset: "d", BestValidAcc: 0, TestAcc: 0, TrainAcc: 0.5, noValid: true, noTest: true}
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"best_valid_acc":null`) || !strings.Contains(s, `"test_acc":null`) || !strings.Contains(s, `"train_acc":0.5`) {
		t.Errorf("got %s", s)
	}
	r.noValid, r.noTest = false, false
	b, _ = r.MarshalJSON()
	if !strings.Contains(string(b), `"best_valid_acc":0,`) {
		t.Errorf("non-empty split: %s", b)
	}
}

// TestRecordRowExtra: a stepper's own columns (Columner) follow the
// common ones in the order of their names; a missing value is empty.
func TestRecordRowExtra(t *testing.T) {
	rec := EpochRecord{Epoch: 3, Extra: map[string]string{"b": "2", "a": "x;y"}}
	row := recordRow(rec, nil, []string{"a", "b", "c"}, nil)
	if got := row[len(row)-3:]; got[0] != "x;y" || got[1] != "2" || got[2] != "" {
		t.Errorf("extra columns %q, want [x;y 2 \"\"]", got)
	}
	if n := len(recordRow(rec, nil, nil, nil)); n != len(row)-3 {
		t.Errorf("%d columns without extras, %d with three", n, len(row))
	}
}

// TestRecordRowFigures: the evaluation's figures (valid_loss, metrics)
// come last, after the stepper's columns; one not reported is empty.
func TestRecordRowFigures(t *testing.T) {
	rec := EpochRecord{Epoch: 3, Extra: map[string]string{"a": "x"}, Metrics: map[string]float64{"valid_loss": 0.25, "test_macro_f1": 0.5}}
	row := recordRow(rec, nil, []string{"a"}, []string{"valid_loss", "valid_macro_f1", "test_macro_f1"})
	if got := row[len(row)-4:]; got[0] != "x" || got[1] != "0.25" || got[2] != "" || got[3] != "0.5" {
		t.Errorf("last columns %q, want [x 0.25 \"\" 0.5]", got)
	}
}
