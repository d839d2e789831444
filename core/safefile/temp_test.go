package safefile

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestParseTemp(t *testing.T) {
	cases := []struct {
		name   string
		target string
		pid    int
		ok     bool
	}{
		{".out.csv.strata-1234-98765.tmp", "out.csv", 1234, true},
		{".a.b.strata-c.strata-7-1.tmp", "a.b.strata-c", 7, true},
		{"..strata-7-1.tmp", "", 0, false}, // no target
		{".out.csv.strata-x-1.tmp", "", 0, false},
		{".out.csv.strata-12.tmp", "", 0, false}, // no random part
		{".out.csv.strata-0-1.tmp", "", 0, false},
		{".out.csv.strata-12-3-4.tmp", "", 0, false},
		{".out.csv.1234.98765.tmp", "", 0, false}, // not ours
		{"out.csv.strata-1234-98765.tmp", "", 0, false},
	}
	for _, c := range cases {
		target, pid, ok := parseTemp(c.name)
		if target != c.target || pid != c.pid || ok != c.ok {
			t.Errorf("parseTemp(%q) = %q, %d, %v; want %q, %d, %v", c.name, target, pid, ok, c.target, c.pid, c.ok)
		}
	}
	f, err := createTemp(filepath.Join(t.TempDir(), "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if target, pid, ok := parseTemp(filepath.Base(f.Name())); target != "out.csv" || pid != os.Getpid() || !ok {
		t.Errorf("createTemp's name %s parses as %q, %d, %v", f.Name(), target, pid, ok)
	}
}

// deadPid returns the pid of a process that has exited.
func deadPid(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestRemoveStaleTemps: only regular temporary files of a dead writer
// (of the target, when one is given) are removed.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	dead := deadPid(t)
	names := map[string]bool{ // name: removed by RemoveStaleTemps(dir, "out.csv")
		fmt.Sprintf(".out.csv.strata-%d-1.tmp", dead):        true,
		fmt.Sprintf(".out.csv.strata-%d-2.tmp", os.Getpid()): false, // a live writer's
		fmt.Sprintf(".other.csv.strata-%d-1.tmp", dead):      false, // another target's
		fmt.Sprintf(".out.csv.%d.1.tmp", dead):               false, // not ours
		fmt.Sprintf("out.csv.strata-%d-1.tmp", dead):         false,
		fmt.Sprintf(".out.csv.strata-%d-3.tmp.keep", dead):   false,
		"x": false, // the symbolic link's target
	}
	for n := range names {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte("partial"), 0o644))
	}
	link := fmt.Sprintf(".out.csv.strata-%d-4.tmp", dead) // a symbolic link is never ours
	must(t, os.Symlink(filepath.Join(dir, "x"), filepath.Join(dir, link)))
	names[link] = false
	if n := RemoveStaleTemps(dir, "out.csv"); n != 1 {
		t.Errorf("removed %d files, want 1", n)
	}
	for n, removed := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); os.IsNotExist(err) != removed {
			t.Errorf("%s: removed %v, want %v", n, os.IsNotExist(err), removed)
		}
	}
	if n := RemoveStaleTemps(dir, ""); n != 1 { // the other target's
		t.Errorf("any target: removed %d files, want 1", n)
	}
}

// TestKilledWriterTempsRemoved kills (SIGKILL) a process in the middle
// of an atomic write, as kill -9 does, which leaves its temporary file;
// the next writer to take the output's lock removes it.
func TestKilledWriterTempsRemoved(t *testing.T) {
	if out := os.Getenv("SAFEFILE_TEST_WRITER"); out != "" {
		f, err := Create(out)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		f.Write(make([]byte, 1<<20))
		fmt.Println("writing")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterTempsRemoved$")
		cmd.Env = append(os.Environ(), "SAFEFILE_TEST_WRITER="+out)
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		if line != "writing\n" {
			t.Fatalf("writer: %q", line)
		}
		must(t, cmd.Process.Kill())
		cmd.Wait()
	}
	if temps := tempsIn(t, dir); len(temps) != 3 {
		t.Fatalf("after 3 kills: %v, want 3 temporary files", temps)
	}
	l, err := Acquire(out)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if temps := tempsIn(t, dir); len(temps) != 0 {
		t.Errorf("after Acquire: %v left", temps)
	}
}

// tempsIn lists the temporary files of this package in dir.
func tempsIn(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range ents {
		if _, _, ok := parseTemp(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}
